import { describe, expect, it } from 'vitest'
import type { Template } from '../../src/templates/templates.ts'
import { type SeededAccount, seedAccount, useTestApp } from '../support/app.ts'
import { humanText, TIMESTAMP, validationBody } from '../support/matchers.ts'

const app = useTestApp()

const content = {
  name: 'Renewal reminder',
  subject: 'Your plan renews soon',
  text_body: 'Hi',
  html_body: '<p>Hi</p>',
}

async function statusAndBody(response: Response) {
  return { status: response.status, body: await response.json() }
}

/** The template the API should return for `owner`, with generated fields matched by shape. */
function expectedTemplate(owner: SeededAccount, fields: Partial<Template>) {
  return {
    id: expect.any(Number),
    user_id: owner.account.id,
    name: content.name,
    subject: content.subject,
    text_body: null,
    html_body: null,
    created_at: expect.stringMatching(TIMESTAMP),
    updated_at: expect.stringMatching(TIMESTAMP),
    ...fields,
  }
}

async function create(owner: SeededAccount, body: unknown = content) {
  return app.request('/templates', { method: 'POST', key: owner.key, body })
}

function get(who: SeededAccount, id: number) {
  return app.request(`/templates/${id}`, { key: who.key })
}

function put(who: SeededAccount, id: number, body: unknown) {
  return app.request(`/templates/${id}`, { method: 'PUT', key: who.key, body })
}

async function createOk(owner: SeededAccount, body: Record<string, unknown> = content): Promise<Template> {
  const response = await create(owner, body)
  const result = await statusAndBody(response)
  expect(result.status).toBe(201)
  return result.body.template as Template
}

/** POST /templates answers 201 {success, template} with the template `body` describes. */
async function expectCreated(owner: SeededAccount, body: Partial<Template>) {
  expect(await statusAndBody(await create(owner, body))).toEqual({
    status: 201,
    body: { success: true, template: expectedTemplate(owner, body) },
  })
}

/** POST /templates with `field` set to `value` answers 400 with the validation body for it. */
async function expectInvalid(owner: SeededAccount, field: 'name' | 'subject', value: string, code: string) {
  expect(await statusAndBody(await create(owner, { ...content, [field]: value }))).toEqual({
    status: 400,
    body: validationBody([{ path: [field], code }]),
  })
}

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

describe('unknown template IDs', () => {
  it.each(['GET', 'PUT', 'DELETE'])(
    '%s /templates/{id} of an ID that does not exist answers 404 {error}',
    async (method) => {
      const owner = await seedAccount(app)
      const created = await createOk(owner)
      await app.request(`/templates/${created.id}`, { method: 'DELETE', key: owner.key })
      for (const id of [created.id, 2147483647, 99999999999, '9007199254740993']) {
        const response = await app.request(`/templates/${id}`, {
          method,
          key: owner.key,
          ...(method === 'PUT' ? { body: { name: 'x' } } : {}),
        })
        expect(await statusAndBody(response), `id ${id}`).toEqual({ status: 404, body: { error: humanText } })
      }
    },
  )
})

describe('another account’s template', () => {
  const ACCESS_DENIED = { status: 403, body: { error: 'Access denied' } }

  /** A template of `owner`, and an `intruder`: another account with a key of its own. */
  async function ownerAndIntruder() {
    const owner = await seedAccount(app)
    const intruder = await seedAccount(app)
    const created = await createOk(owner)
    return { owner, intruder, created }
  }

  /** `owner` still reads `created` as it was. */
  async function expectUnchanged(owner: SeededAccount, created: Template) {
    const read = await get(owner, created.id)
    expect(await statusAndBody(read)).toEqual({ status: 200, body: { success: true, template: created } })
  }

  it('GET answers 403 {error: "Access denied"}', async () => {
    const { intruder, created } = await ownerAndIntruder()
    const response = await get(intruder, created.id)
    expect(await statusAndBody(response)).toEqual(ACCESS_DENIED)
  })

  it('PUT answers 403 {error: "Access denied"} and the template is not modified', async () => {
    const { owner, intruder, created } = await ownerAndIntruder()
    const response = await put(intruder, created.id, { name: 'Hijacked', subject: 'Hijacked' })
    expect(await statusAndBody(response)).toEqual(ACCESS_DENIED)
    await expectUnchanged(owner, created)
  })

  it('DELETE answers 403 {error: "Access denied"} and the template is not deleted', async () => {
    const { owner, intruder, created } = await ownerAndIntruder()
    const response = await app.request(`/templates/${created.id}`, { method: 'DELETE', key: intruder.key })
    expect(await statusAndBody(response)).toEqual(ACCESS_DENIED)
    await expectUnchanged(owner, created)
  })

  it('GET /templates lists only the caller’s templates', async () => {
    const owner = await seedAccount(app)
    const other = await seedAccount(app)
    const mine = await createOk(owner)
    const theirs = await createOk(other, { ...content, name: 'Theirs' })
    const response = await app.request('/templates', { key: owner.key })
    expect(await statusAndBody(response)).toEqual({ status: 200, body: { success: true, templates: [mine] } })
    const otherList = await app.request('/templates', { key: other.key })
    expect(await otherList.json()).toEqual({ success: true, templates: [theirs] })
  })
})

describe('plan template limits', () => {
  it('Free: 3 templates are accepted, the 4th answers 403 Template limit reached', async () => {
    const owner = await seedAccount(app, { plan: 'free' })
    for (let i = 1; i <= 3; i++) await createOk(owner, { ...content, name: `Template ${i}` })
    const response = await create(owner, { ...content, name: 'Template 4' })
    expect(await statusAndBody(response)).toEqual({
      status: 403,
      body: { error: 'Template limit reached', limit: 3, used: 3, upgradeRequired: true, message: humanText },
    })
    const list = await app.request('/templates', { key: owner.key })
    expect((await list.json()).templates).toHaveLength(3)
  })

  it('Free: after deleting one of the 3, creating works again (and the next one is refused)', async () => {
    const owner = await seedAccount(app, { plan: 'free' })
    const made: Template[] = []
    for (let i = 1; i <= 3; i++) made.push(await createOk(owner, { ...content, name: `Template ${i}` }))
    expect((await create(owner)).status).toBe(403)
    const deleted = await app.request(`/templates/${made[0]?.id}`, { method: 'DELETE', key: owner.key })
    expect(deleted.status).toBe(200)
    await expectCreated(owner, { ...content, name: 'Replacement' })
    expect(await statusAndBody(await create(owner))).toEqual({
      status: 403,
      body: { error: 'Template limit reached', limit: 3, used: 3, upgradeRequired: true, message: humanText },
    })
  })

  it('Free: concurrent creations never exceed 3 templates', async () => {
    const owner = await seedAccount(app, { plan: 'free' })
    await createOk(owner, { ...content, name: 'Template 1' })
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => create(owner, { ...content, name: `Racing ${i}` })),
    )
    expect(results.map((r) => r.status).sort()).toEqual([201, 201, 403, 403, 403, 403])
    const list = await app.request('/templates', { key: owner.key })
    expect((await list.json()).templates).toHaveLength(3)
  })

  it('Free: another account’s templates do not count toward the limit', async () => {
    const other = await seedAccount(app, { plan: 'free' })
    for (let i = 1; i <= 3; i++) await createOk(other, { ...content, name: `Theirs ${i}` })
    const owner = await seedAccount(app, { plan: 'free' })
    expect((await create(owner)).status).toBe(201)
  })

  it('Pro: a 4th and a 5th template are accepted', async () => {
    const owner = await seedAccount(app, { plan: 'pro' })
    for (let i = 1; i <= 5; i++) await expectCreated(owner, { ...content, name: `Template ${i}` })
    const list = await app.request('/templates', { key: owner.key })
    expect((await list.json()).templates).toHaveLength(5)
  })
})
