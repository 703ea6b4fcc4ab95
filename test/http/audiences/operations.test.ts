import { describe, expect, it } from 'vitest'
import { useTestApp } from '../../support/app.ts'
import {
  AUDIENCE_NOT_FOUND,
  audienceRequests,
  content,
  expectedAudience,
  statusAndBody,
} from '../../support/audiences.ts'
import { humanText, TIMESTAMP, validationBody } from '../../support/matchers.ts'

const app = useTestApp()
const { pro, create, list, get, put, remove, createOk, addMembers, expectUnchanged } = audienceRequests(app)

describe('the five audience operations', () => {
  it('POST /audiences answers 201 {success, audience} without member_count', async () => {
    const owner = await pro()
    expect(await statusAndBody(await create(owner))).toEqual({
      status: 201,
      body: { success: true, audience: expectedAudience(owner, content) },
    })
  })

  it('POST /audiences without description stores description null', async () => {
    const owner = await pro()
    expect(await statusAndBody(await create(owner, { name: 'Beta testers' }))).toEqual({
      status: 201,
      body: { success: true, audience: expectedAudience(owner, { name: 'Beta testers', description: null }) },
    })
  })

  it('GET /audiences/{id} answers 200 {success, audience} with member_count', async () => {
    const owner = await pro()
    const created = await createOk(owner)
    await expectUnchanged(owner, created, 0)
    await addMembers(owner, created.id, ['ada@example.com', 'grace@example.com', 'ADA@example.com'])
    await expectUnchanged(owner, created, 2)
  })

  it('GET /audiences answers 200 {success, audiences} with member counts, newest first', async () => {
    const owner = await pro()
    expect(await statusAndBody(await list(owner))).toEqual({
      status: 200,
      body: { success: true, audiences: [] },
    })
    const first = await createOk(owner, { name: 'First' })
    const second = await createOk(owner, { name: 'Second' })
    const third = await createOk(owner, { name: 'Third' })
    await addMembers(owner, second.id, ['ada@example.com', 'grace@example.com'])
    expect(await statusAndBody(await list(owner))).toEqual({
      status: 200,
      body: {
        success: true,
        audiences: [
          { ...third, member_count: 0 },
          { ...second, member_count: 2 },
          { ...first, member_count: 0 },
        ],
      },
    })
  })

  it('PUT /audiences/{id} answers 200 {success, audience} with the change, without member_count', async () => {
    const owner = await pro()
    const created = await createOk(owner)
    await addMembers(owner, created.id, ['ada@example.com'])
    const change = { name: 'Paying customers', description: 'Everyone who pays' }
    const expected = { ...created, ...change, updated_at: expect.stringMatching(TIMESTAMP) }
    expect(await statusAndBody(await put(owner, created.id, change))).toEqual({
      status: 200,
      body: { success: true, audience: expected },
    })
    expect((await (await get(owner, created.id)).json()).audience).toEqual({ ...expected, member_count: 1 })
  })

  it('DELETE /audiences/{id} answers 200 {success, message} and the audience is gone', async () => {
    const owner = await pro()
    const created = await createOk(owner)
    expect(await statusAndBody(await remove(owner, created.id))).toEqual({
      status: 200,
      body: { success: true, message: humanText },
    })
    expect(await statusAndBody(await get(owner, created.id))).toEqual(AUDIENCE_NOT_FOUND)
    expect(await (await list(owner)).json()).toEqual({ success: true, audiences: [] })
  })
})

describe('PUT /audiences/{id}', () => {
  it('changes only the given fields; an empty body keeps both', async () => {
    const owner = await pro()
    const created = await createOk(owner)
    const renamed = await statusAndBody(await put(owner, created.id, { name: 'Renamed' }))
    expect(renamed.body.audience).toEqual({ ...created, name: 'Renamed', updated_at: expect.any(String) })
    const described = await statusAndBody(await put(owner, created.id, { description: 'New text' }))
    expect(described.body.audience).toEqual({
      ...created,
      name: 'Renamed',
      description: 'New text',
      updated_at: expect.any(String),
    })
    const untouched = await statusAndBody(await put(owner, created.id, {}))
    expect(untouched).toEqual({ status: 200, body: described.body })
  })

  it('moves updated_at only when a field changes', async () => {
    const owner = await pro()
    const created = await createOk(owner)
    const earlier = '2026-01-02 03:04:05'
    await app.services.sql`
      update audiences set updated_at = ${`${earlier}+00`} where id = ${created.id}`
    const updatedAt = async (change: object) =>
      (await (await put(owner, created.id, change)).json()).audience.updated_at
    expect(await updatedAt({})).toBe(earlier)
    expect(await updatedAt({ name: created.name, description: created.description })).toBe(earlier)
    expect(await updatedAt({ description: 'Changed' })).not.toBe(earlier)
  })
})

describe('field limits', () => {
  const ofLength = (length: number) => 'n'.repeat(length)

  it.each([
    { field: 'name', value: ofLength(1) },
    { field: 'name', value: ofLength(255) },
    { field: 'description', value: '' },
    { field: 'description', value: ofLength(1000) },
  ])('POST: $field of $value.length characters is accepted (201)', async ({ field, value }) => {
    const owner = await pro()
    const body = { ...content, [field]: value }
    expect(await statusAndBody(await create(owner, body))).toEqual({
      status: 201,
      body: { success: true, audience: expectedAudience(owner, body) },
    })
  })

  it.each([
    { field: 'name', value: '', code: 'too_small' },
    { field: 'name', value: ofLength(256), code: 'too_big' },
    { field: 'name', value: 42, code: 'invalid_type' },
    { field: 'description', value: ofLength(1001), code: 'too_big' },
    { field: 'description', value: 42, code: 'invalid_type' },
  ])(
    'POST: $field $code answers 400 with the validation body and creates nothing',
    async ({ field, value, code }) => {
      const owner = await pro()
      expect(await statusAndBody(await create(owner, { ...content, [field]: value }))).toEqual({
        status: 400,
        body: validationBody([{ path: [field], code }]),
      })
      expect(await (await list(owner)).json()).toEqual({ success: true, audiences: [] })
    },
  )

  it('POST: name is required', async () => {
    const owner = await pro()
    expect(await statusAndBody(await create(owner, { description: 'No name' }))).toEqual({
      status: 400,
      body: validationBody([{ path: ['name'], code: 'invalid_type' }]),
    })
  })

  it('PUT: name of 255 and description of 1000 characters are accepted', async () => {
    const owner = await pro()
    const created = await createOk(owner)
    const change = { name: ofLength(255), description: ofLength(1000) }
    expect(await statusAndBody(await put(owner, created.id, change))).toEqual({
      status: 200,
      body: { success: true, audience: { ...created, ...change, updated_at: expect.any(String) } },
    })
  })

  it.each([
    { field: 'name', value: '', code: 'too_small' },
    { field: 'name', value: ofLength(256), code: 'too_big' },
    { field: 'description', value: ofLength(1001), code: 'too_big' },
    { field: 'description', value: null, code: 'invalid_type' },
  ])(
    'PUT: $field $code answers 400 with the validation body and changes nothing',
    async ({ field, value, code }) => {
      const owner = await pro()
      const created = await createOk(owner)
      expect(await statusAndBody(await put(owner, created.id, { [field]: value }))).toEqual({
        status: 400,
        body: validationBody([{ path: [field], code }]),
      })
      await expectUnchanged(owner, created)
    },
  )
})
