import { describe, expect, it } from 'vitest'
import {
  type Audience,
  type AudienceWithCount,
  createTemporaryAudience,
} from '../../src/audiences/audiences.ts'
import { operations } from '../../src/generated/routes.ts'
import { type SeededAccount, seedAccount, useTestApp } from '../support/app.ts'
import { humanText, TIMESTAMP, validationBody } from '../support/matchers.ts'

const app = useTestApp()

const content = { name: 'Customers', description: 'Everyone with an active subscription' }

const ACCESS_DENIED = { status: 403, body: { error: 'Access denied' } }
const NOT_FOUND = { status: 404, body: { error: 'Audience not found' } }
const INVALID_ID = { status: 400, body: { code: 'INVALID_ID', message: humanText } }

async function statusAndBody(response: Response) {
  return { status: response.status, body: await response.json() }
}

function pro() {
  return seedAccount(app, { plan: 'pro' })
}

/** The audience the API should return for `owner`, with generated fields matched by shape. */
function expectedAudience(owner: SeededAccount, fields: Partial<AudienceWithCount>) {
  return {
    id: expect.any(Number),
    user_id: owner.account.id,
    name: content.name,
    description: null,
    temporary: 0,
    created_at: expect.stringMatching(TIMESTAMP),
    updated_at: expect.stringMatching(TIMESTAMP),
    ...fields,
  }
}

function create(who: SeededAccount, body: unknown = content) {
  return app.request('/audiences', { method: 'POST', key: who.key, body })
}

function list(who: SeededAccount) {
  return app.request('/audiences', { key: who.key })
}

function get(who: SeededAccount, id: number | string) {
  return app.request(`/audiences/${id}`, { key: who.key })
}

function put(who: SeededAccount, id: number | string, body: unknown) {
  return app.request(`/audiences/${id}`, { method: 'PUT', key: who.key, body })
}

function remove(who: SeededAccount, id: number | string) {
  return app.request(`/audiences/${id}`, { method: 'DELETE', key: who.key })
}

async function createOk(owner: SeededAccount, body: Record<string, unknown> = content): Promise<Audience> {
  const result = await statusAndBody(await create(owner, body))
  expect(result.status).toBe(201)
  return result.body.audience as Audience
}

async function addMembers(owner: SeededAccount, id: number, emails: string[]) {
  const members = emails.map((email) => ({ email }))
  const response = await app.request(`/audiences/${id}/members`, { key: owner.key, body: { members } })
  expect(response.status).toBe(201)
}

/** `owner` still reads `audience` as it was (with its member count). */
async function expectUnchanged(owner: SeededAccount, audience: Audience, memberCount = 0) {
  expect(await statusAndBody(await get(owner, audience.id))).toEqual({
    status: 200,
    body: { success: true, audience: { ...audience, member_count: memberCount } },
  })
}

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
    expect(await statusAndBody(await get(owner, created.id))).toEqual(NOT_FOUND)
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

describe('GET /audiences order and scope', () => {
  it('orders by creation time, newest first, then by id, newest first', async () => {
    const owner = await pro()
    const older = await createOk(owner, { name: 'Created first, dated last' })
    const a = await createOk(owner, { name: 'Same instant A' })
    const b = await createOk(owner, { name: 'Same instant B' })
    await app.services.sql`
      update audiences set created_at = case when id = ${older.id} then now() + interval '1 hour'
        else timestamptz '2025-01-10 08:00:00+00' end
      where id in (${older.id}, ${a.id}, ${b.id})`
    const { audiences } = await (await list(owner)).json()
    expect(audiences.map((audience: Audience) => audience.id)).toEqual([older.id, b.id, a.id])
    expect(audiences[1].created_at).toBe('2025-01-10 08:00:00')
  })

  it('lists only the caller’s audiences', async () => {
    const owner = await pro()
    const other = await pro()
    const mine = await createOk(owner)
    const theirs = await createOk(other, { name: 'Theirs' })
    expect(await (await list(owner)).json()).toEqual({
      success: true,
      audiences: [{ ...mine, member_count: 0 }],
    })
    expect(await (await list(other)).json()).toEqual({
      success: true,
      audiences: [{ ...theirs, member_count: 0 }],
    })
  })
})

describe('temporary audiences (behind recipients batches)', () => {
  const recipients = ['ada@example.com', 'Grace@example.com', 'ADA@EXAMPLE.COM', 'grace@example.com']

  it('are left out of GET /audiences but read by ID, temporary 1, one member per address', async () => {
    const owner = await pro()
    const lasting = await createOk(owner)
    const id = await createTemporaryAudience(app.services.sql, owner.account.id, recipients, 'Spring sale')
    expect(await (await list(owner)).json()).toEqual({
      success: true,
      audiences: [{ ...lasting, member_count: 0 }],
    })
    expect(await statusAndBody(await get(owner, id))).toEqual({
      status: 200,
      body: {
        success: true,
        audience: expectedAudience(owner, { id, name: 'Spring sale', temporary: 1, member_count: 2 }),
      },
    })
    const members = await (await app.request(`/audiences/${id}/members`, { key: owner.key })).json()
    expect(members.members.map((member: { email: string }) => member.email)).toEqual([
      'ada@example.com',
      'Grace@example.com',
    ])
  })

  it('are another account’s like any other: 403 Access denied', async () => {
    const owner = await pro()
    const intruder = await pro()
    const id = await createTemporaryAudience(app.services.sql, owner.account.id, recipients, 'Private batch')
    expect(await statusAndBody(await get(intruder, id))).toEqual(ACCESS_DENIED)
  })
})

describe('Free plan', () => {
  const refusal = {
    status: 403,
    body: {
      code: 'FEATURE_NOT_AVAILABLE',
      message: humanText,
      details: { feature: 'audiences', upgradeRequired: true },
    },
  }
  const VALID_BODIES: Record<string, unknown> = {
    createAudience: content,
    updateAudience: { name: 'Renamed' },
    addAudienceMembers: { members: [{ email: 'ada@example.com' }] },
  }
  const audienceOperations = operations
    .filter((op) => op.path.startsWith('/audiences'))
    .map((op) => ({ ...op, METHOD: op.method.toUpperCase() }))

  it('covers all eight audience operations', () => {
    expect(audienceOperations.map((op) => op.operationId).sort()).toEqual([
      'addAudienceMembers',
      'createAudience',
      'deleteAudience',
      'deleteAudienceMember',
      'getAudience',
      'listAudienceMembers',
      'listAudiences',
      'updateAudience',
    ])
  })

  it.each(audienceOperations)('$METHOD $path answers 403 FEATURE_NOT_AVAILABLE', async (op) => {
    const owner = await pro()
    const audience = await createOk(owner)
    await addMembers(owner, audience.id, ['ada@example.com'])
    const [member] = await app.services.sql<{ id: number }[]>`
      select id from audience_members where audience_id = ${audience.id}`
    // A Free account reaching its own audience, e.g. one kept after a downgrade.
    await app.services.sql`update accounts set plan = 'free' where id = ${owner.account.id}`
    const path = op.path.replace('{id}', String(audience.id)).replace('{memberId}', String(member?.id))
    const body = VALID_BODIES[op.operationId]
    const response = await app.request(path, { method: op.METHOD, key: owner.key, ...(body ? { body } : {}) })
    expect(await statusAndBody(response)).toEqual(refusal)
    await app.services.sql`update accounts set plan = 'pro' where id = ${owner.account.id}`
    await expectUnchanged(owner, audience, 1)
  })

  it.each(audienceOperations)('$METHOD $path answers 403 before checking the ID and body', async (op) => {
    const free = await seedAccount(app, { plan: 'free' })
    const path = op.path.replace(/\{[^}]+\}/g, 'abc')
    const body = VALID_BODIES[op.operationId] ? { name: 42, members: [] } : undefined
    const response = await app.request(path, { method: op.METHOD, key: free.key, ...(body ? { body } : {}) })
    expect(await statusAndBody(response)).toEqual(refusal)
  })

  it('an unknown route under /audiences stays 404 NOT_FOUND', async () => {
    const free = await seedAccount(app, { plan: 'free' })
    for (const [method, path] of [
      ['PATCH', '/audiences'],
      ['GET', '/audiences/1/unknown'],
    ] as const) {
      const response = await app.request(path, { method, key: free.key })
      expect(await statusAndBody(response)).toEqual({
        status: 404,
        body: { code: 'NOT_FOUND', message: humanText },
      })
    }
  })

  it('POST /audiences on Free creates nothing', async () => {
    const free = await seedAccount(app, { plan: 'free' })
    expect((await create(free)).status).toBe(403)
    const [{ count } = { count: -1 }] = await app.services.sql<{ count: number }[]>`
      select count(*)::int as count from audiences where account_id = ${free.account.id}`
    expect(count).toBe(0)
  })
})

describe('another account’s audience', () => {
  async function ownerAndIntruder() {
    const owner = await pro()
    const intruder = await pro()
    const created = await createOk(owner)
    return { owner, intruder, created }
  }

  it('GET answers 403 {error: "Access denied"}', async () => {
    const { intruder, created } = await ownerAndIntruder()
    expect(await statusAndBody(await get(intruder, created.id))).toEqual(ACCESS_DENIED)
  })

  it('PUT answers 403 {error: "Access denied"} and the audience is not modified', async () => {
    const { owner, intruder, created } = await ownerAndIntruder()
    expect(await statusAndBody(await put(intruder, created.id, { name: 'Hijacked' }))).toEqual(ACCESS_DENIED)
    await expectUnchanged(owner, created)
  })

  it('DELETE answers 403 {error: "Access denied"} and the audience is not deleted', async () => {
    const { owner, intruder, created } = await ownerAndIntruder()
    expect(await statusAndBody(await remove(intruder, created.id))).toEqual(ACCESS_DENIED)
    await expectUnchanged(owner, created)
  })
})

describe('audience IDs', () => {
  const requests = {
    GET: (who: SeededAccount, id: number | string) => get(who, id),
    PUT: (who: SeededAccount, id: number | string) => put(who, id, { name: 'x' }),
    DELETE: (who: SeededAccount, id: number | string) => remove(who, id),
  }

  it.each(Object.keys(requests) as (keyof typeof requests)[])(
    '%s of an ID that does not exist (deleted, or beyond any row) answers 404 {error: "Audience not found"}',
    async (method) => {
      const owner = await pro()
      const created = await createOk(owner)
      await remove(owner, created.id)
      for (const id of [created.id, 2147483647, 2147483648, 99999999999, '99999999999999999999']) {
        expect(await statusAndBody(await requests[method](owner, id)), `id ${id}`).toEqual(NOT_FOUND)
      }
    },
  )

  it.each(Object.keys(requests) as (keyof typeof requests)[])(
    '%s of a non-numeric ID answers 400 INVALID_ID',
    async (method) => {
      const owner = await pro()
      for (const id of ['abc', '1.5', '-1', '1e3']) {
        expect(await statusAndBody(await requests[method](owner, id)), `id ${id}`).toEqual(INVALID_ID)
      }
    },
  )
})
