import { describe, expect, it } from 'vitest'
import type { Template } from '../../../src/templates/templates.ts'
import { seedAccount, useTestApp } from '../../support/app.ts'
import { humanText, TIMESTAMP, validationBody } from '../../support/matchers.ts'
import { content, expectedTemplate, statusAndBody, templateRequests } from '../../support/templates.ts'

const app = useTestApp()
const { create, get, put, createOk, expectCreated, expectInvalid } = templateRequests(app)

describe('the five template operations', () => {
  it('POST /templates answers 201 {success, template} with every field', async () => {
    const owner = await seedAccount(app)
    const response = await create(owner)
    expect(await statusAndBody(response)).toEqual({
      status: 201,
      body: { success: true, template: expectedTemplate(owner, content) },
    })
  })

  it('GET /templates/{id} answers 200 {success, template}, the same template as created', async () => {
    const owner = await seedAccount(app)
    const created = await createOk(owner)
    const response = await get(owner, created.id)
    expect(await statusAndBody(response)).toEqual({ status: 200, body: { success: true, template: created } })
  })

  it('GET /templates answers 200 {success, templates} with the caller’s templates', async () => {
    const owner = await seedAccount(app)
    const empty = await app.request('/templates', { key: owner.key })
    expect(await statusAndBody(empty)).toEqual({ status: 200, body: { success: true, templates: [] } })
    const first = await createOk(owner)
    const second = await createOk(owner, { name: 'Second', subject: 'Two', html_body: '<b>2</b>' })
    const response = await app.request('/templates', { key: owner.key })
    const { status, body } = await statusAndBody(response)
    expect(status).toBe(200)
    expect(body).toEqual({ success: true, templates: expect.any(Array) })
    expect([...body.templates].sort((a: Template, b: Template) => a.id - b.id)).toEqual([first, second])
  })

  it('PUT /templates/{id} answers 200 {success, template} with the change applied', async () => {
    const owner = await seedAccount(app)
    const created = await createOk(owner)
    const change = { name: 'Renamed', subject: 'New subject', text_body: 'New text', html_body: '<p>New</p>' }
    const response = await put(owner, created.id, change)
    expect(await statusAndBody(response)).toEqual({
      status: 200,
      body: {
        success: true,
        template: expectedTemplate(owner, { ...change, id: created.id, created_at: created.created_at }),
      },
    })
    const read = await get(owner, created.id)
    expect((await read.json()).template).toEqual(
      expectedTemplate(owner, { ...change, id: created.id, created_at: created.created_at }),
    )
  })

  it('DELETE /templates/{id} answers 200 {success, message} and the template is gone', async () => {
    const owner = await seedAccount(app)
    const created = await createOk(owner)
    const response = await app.request(`/templates/${created.id}`, { method: 'DELETE', key: owner.key })
    expect(await statusAndBody(response)).toEqual({
      status: 200,
      body: { success: true, message: humanText },
    })
    const read = await get(owner, created.id)
    expect(await statusAndBody(read)).toEqual({ status: 404, body: { error: humanText } })
    const list = await app.request('/templates', { key: owner.key })
    expect(await list.json()).toEqual({ success: true, templates: [] })
  })
})

describe('field limits on creation', () => {
  for (const { field, letter, max } of [
    { field: 'name', letter: 'n', max: 255 },
    { field: 'subject', letter: 's', max: 998 },
  ] as const) {
    const ofLength = (length: number) => letter.repeat(length)

    it(`${field}: "" is refused (400), 1 character is accepted (201)`, async () => {
      const owner = await seedAccount(app, { plan: 'pro' })
      await expectInvalid(owner, field, '', 'too_small')
      await expectCreated(owner, { ...content, [field]: ofLength(1) })
    })

    it(`${field}: ${max} characters are accepted (201), ${max + 1} are refused (400)`, async () => {
      const owner = await seedAccount(app, { plan: 'pro' })
      await expectCreated(owner, { ...content, [field]: ofLength(max) })
      await expectInvalid(owner, field, ofLength(max + 1), 'too_big')
    })
  }

  it('name and subject are required', async () => {
    const owner = await seedAccount(app)
    expect(await statusAndBody(await create(owner, { text_body: 'Hi' }))).toEqual({
      status: 400,
      body: {
        success: false,
        error: {
          name: 'ZodError',
          issues: expect.arrayContaining([
            { path: ['name'], message: humanText, code: 'invalid_type' },
            { path: ['subject'], message: humanText, code: 'invalid_type' },
          ]),
        },
      },
    })
  })

  it('neither text_body nor html_body: 400 with the validation body', async () => {
    const owner = await seedAccount(app)
    expect(await statusAndBody(await create(owner, { name: 'No body', subject: 'Hi' }))).toEqual({
      status: 400,
      body: validationBody([{ path: [], code: 'custom' }]),
    })
    const list = await app.request('/templates', { key: owner.key })
    expect(await list.json()).toEqual({ success: true, templates: [] })
  })

  it.each([
    ['html_body', 'text_body', { name: 'Html only', subject: 'Hi', html_body: '<p>Hi</p>' }],
    ['text_body', 'html_body', { name: 'Text only', subject: 'Hi', text_body: 'Hi' }],
  ] as const)('only %s is enough (%s is null)', async (_given, missing, body) => {
    const owner = await seedAccount(app)
    expect(await statusAndBody(await create(owner, body))).toEqual({
      status: 201,
      body: { success: true, template: expectedTemplate(owner, { ...body, [missing]: null }) },
    })
  })
})

describe('PUT /templates/{id}', () => {
  it('a partial update changes only the given fields and keeps the others', async () => {
    const owner = await seedAccount(app)
    const created = await createOk(owner)
    const response = await put(owner, created.id, { subject: 'Only the subject changed' })
    expect(await statusAndBody(response)).toEqual({
      status: 200,
      body: {
        success: true,
        template: {
          ...created,
          subject: 'Only the subject changed',
          updated_at: expect.stringMatching(TIMESTAMP),
        },
      },
    })
    const html = await put(owner, created.id, { html_body: '<p>Changed</p>' })
    expect((await html.json()).template).toEqual({
      ...created,
      subject: 'Only the subject changed',
      html_body: '<p>Changed</p>',
      updated_at: expect.stringMatching(TIMESTAMP),
    })
  })

  it('moves updated_at only when a field changes', async () => {
    const owner = await seedAccount(app)
    const created = await createOk(owner)
    const earlier = '2026-01-02 03:04:05'
    await app.services.sql`
      update templates set updated_at = ${`${earlier}+00`} where id = ${created.id}`
    const updatedAt = async (change: object) =>
      (await (await put(owner, created.id, change)).json()).template.updated_at
    expect(await updatedAt({})).toBe(earlier)
    expect(await updatedAt({ subject: created.subject, html_body: created.html_body })).toBe(earlier)
    expect(await updatedAt({ text_body: 'Changed' })).not.toBe(earlier)
  })

  it('accepts the limits: name 255 and subject 998 characters', async () => {
    const owner = await seedAccount(app)
    const created = await createOk(owner)
    const change = { name: 'n'.repeat(255), subject: 's'.repeat(998) }
    const response = await put(owner, created.id, change)
    expect(await statusAndBody(response)).toEqual({
      status: 200,
      body: {
        success: true,
        template: { ...created, ...change, updated_at: expect.stringMatching(TIMESTAMP) },
      },
    })
  })

  it.each([
    { field: 'name', value: '', code: 'too_small' },
    { field: 'name', value: 'n'.repeat(256), code: 'too_big' },
    { field: 'subject', value: '', code: 'too_small' },
    { field: 'subject', value: 's'.repeat(999), code: 'too_big' },
    { field: 'text_body', value: 42, code: 'invalid_type' },
    { field: 'html_body', value: false, code: 'invalid_type' },
  ])(
    'an invalid $field ($code) answers 400 with the validation body and changes nothing',
    async ({ field, value, code }) => {
      const owner = await seedAccount(app)
      const created = await createOk(owner)
      const response = await put(owner, created.id, { [field]: value })
      expect(await statusAndBody(response)).toEqual({
        status: 400,
        body: validationBody([{ path: [field], code }]),
      })
      const read = await get(owner, created.id)
      expect((await read.json()).template).toEqual(created)
    },
  )
})
