import { describe, expect, it } from 'vitest'
import { operations } from '../../src/generated/routes.ts'
import { seedAccount, useTestApp } from '../support/app.ts'
import { humanText, validationBody } from '../support/matchers.ts'

const app = useTestApp()

async function statusAndBody(response: Response) {
  return { status: response.status, body: await response.json() }
}

const template = { name: 'Welcome', subject: 'Hello', text_body: 'Hi there' }

/** A valid body for each operation that takes one. */
const VALID_BODIES: Record<string, unknown> = {
  sendEmail: { to: 'ada@example.com', subject: 'Hi', text_body: 'Hello' },
  enqueueEmail: { to: 'ada@example.com', subject: 'Hi', text_body: 'Hello' },
  createBatch: { template: { subject: 'Hi', text_body: 'Hello' }, recipients: ['ada@example.com'] },
  createAudience: { name: 'Customers' },
  updateAudience: { name: 'Paying customers' },
  addAudienceMembers: { members: [{ email: 'ada@example.com' }] },
  createTemplate: template,
  updateTemplate: { subject: 'Hello again' },
}

describe('malformed JSON', () => {
  it('POST /templates with a body that does not parse answers 400 INVALID_JSON', async () => {
    const { key } = await seedAccount(app)
    const response = await app.request('/templates', { method: 'POST', key, body: '{"name": "x",' })
    expect(await statusAndBody(response)).toEqual({
      status: 400,
      body: { code: 'INVALID_JSON', message: humanText },
    })
  })

  it('a body not sent as JSON answers 400 INVALID_JSON', async () => {
    const { key } = await seedAccount(app)
    const response = await app.request('/templates', {
      method: 'POST',
      key,
      body: JSON.stringify(template),
      headers: { 'content-type': 'text/plain' },
    })
    expect(await statusAndBody(response)).toEqual({
      status: 400,
      body: { code: 'INVALID_JSON', message: humanText },
    })
  })
})

describe('text PostgreSQL cannot store', () => {
  it.each([
    ['a template name', '/templates', { ...template, name: 'Wel\u0000come' }, ['name']],
    [
      'an email subject',
      '/send',
      { to: 'ada@example.com', subject: 'Hi\u0000', text_body: 'x' },
      ['subject'],
    ],
    ['an unknown field', '/templates', { ...template, extra: ['ok', '\u0000'] }, ['extra', 1]],
    ['a subject, as a lone surrogate', '/templates', { ...template, subject: 'x\ud800y' }, ['subject']],
    [
      'an email, as a lone low surrogate',
      '/send',
      { to: 'ada@example.com', subject: '\udc00', text_body: 'x' },
      ['subject'],
    ],
    [
      'a payload key',
      '/audiences/1/members',
      { members: [{ email: 'ada@example.com', payload: { 'na\u0000me': 'Ada' } }] },
      ['members', 0, 'payload', 'na\u0000me'],
    ],
    [
      'a payload value, as a lone surrogate',
      '/audiences/1/members',
      { members: [{ email: 'ada@example.com', payload: { name: '\ud83d' } }] },
      ['members', 0, 'payload', 'name'],
    ],
  ])(
    'a NUL character (\\u0000) or lone surrogate in %s answers 400 with the validation body',
    async (_what, path, body, at) => {
      const { key } = await seedAccount(app, { plan: 'pro' })
      // JSON.stringify writes the NUL as the escape `\u0000`, as a client would send it.
      const response = await app.request(path, { method: 'POST', key, body })
      expect(await statusAndBody(response)).toEqual({
        status: 400,
        body: validationBody([{ path: at, code: 'invalid_format' }]),
      })
    },
  )
})

describe('the plan gate comes first', () => {
  it.each([
    ['/enqueue', { to: 'ada@example.com', subject: 'Hi\u0000', text_body: 'x' }, 'async_sending'],
    [
      '/send/batch',
      { template: { subject: '\u0000', text_body: 'x' }, recipients: ['a@example.com'] },
      'batch_sending',
    ],
    ['/audiences', { name: 'Cus\u0000tomers' }, 'audiences'],
  ])('a Free POST %s with text PostgreSQL cannot store answers 403, not 400', async (path, body, feature) => {
    const { key, account } = await seedAccount(app, { plan: 'free' })
    const response = await app.request(path, { method: 'POST', key, body })
    const answer = await statusAndBody(response)
    expect(answer).toEqual({
      status: 403,
      body: {
        code: 'FEATURE_NOT_AVAILABLE',
        message: humanText,
        details: { feature, upgradeRequired: true },
      },
    })
    // A self-hosted install has no billing: the refusal names the operator's command.
    expect((answer.body as { message: string }).message).toContain(
      `\`mailroom account set-plan ${account.id} pro\` lifts this`,
    )
  })
})

describe('body size limit', () => {
  // On a real socket: how the body travels (Content-Length or chunked) is what is tested.
  const small = useTestApp({ bodyLimitBytes: 1024 }, { listen: true })

  /** A template body whose JSON text is exactly `bytes` long (ASCII only). */
  function templateOfSize(bytes: number, extra: Record<string, unknown> = {}): string {
    const base = { ...template, ...extra, text_body: '' }
    const padding = bytes - JSON.stringify(base).length
    const text = JSON.stringify({ ...base, text_body: 'x'.repeat(padding) })
    expect(Buffer.byteLength(text)).toBe(bytes)
    return text
  }

  it('a body of exactly the limit (1024 bytes) is accepted and reaches validation', async () => {
    const { key } = await seedAccount(small)
    const created = await small.request('/templates', { method: 'POST', key, body: templateOfSize(1024) })
    expect(created.status).toBe(201)
    const invalid = await small.request('/templates', {
      method: 'POST',
      key,
      body: templateOfSize(1024, { name: 123 }),
    })
    expect(await statusAndBody(invalid)).toEqual({
      status: 400,
      body: validationBody([{ path: ['name'], code: 'invalid_type' }]),
    })
  })

  it('a body one byte over the limit (1025 bytes) answers 413 PAYLOAD_TOO_LARGE', async () => {
    const { key } = await seedAccount(small)
    const response = await small.request('/templates', { method: 'POST', key, body: templateOfSize(1025) })
    expect(await statusAndBody(response)).toEqual({
      status: 413,
      body: { code: 'PAYLOAD_TOO_LARGE', message: humanText },
    })
    const list = await small.request('/templates', { key })
    expect(await list.json()).toEqual({ success: true, templates: [] })
  })

  /** The same body sent chunked (no Content-Length), in pieces of 100 bytes. */
  function streamed(key: string, text: string): Promise<Response> {
    const bytes = new TextEncoder().encode(text)
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < bytes.length; at += 100) controller.enqueue(bytes.subarray(at, at + 100))
        controller.close()
      },
    })
    return fetch(`${small.baseUrl}/templates`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit)
  }

  it('without Content-Length, a streamed body of 1024 bytes is accepted', async () => {
    const { key } = await seedAccount(small)
    const response = await streamed(key, templateOfSize(1024))
    expect(response.status).toBe(201)
  })

  it('without Content-Length, a streamed body of 1025 bytes answers 413 PAYLOAD_TOO_LARGE', async () => {
    const { key } = await seedAccount(small)
    const response = await streamed(key, templateOfSize(1025))
    expect(await statusAndBody(response)).toEqual({
      status: 413,
      body: { code: 'PAYLOAD_TOO_LARGE', message: humanText },
    })
  })
})

describe('unknown route', () => {
  it('GET /v1/nope with a valid key answers 404 NOT_FOUND', async () => {
    const { key } = await seedAccount(app)
    const response = await app.request('/nope', { key })
    expect(await statusAndBody(response)).toEqual({
      status: 404,
      body: { code: 'NOT_FOUND', message: humanText },
    })
  })
})

describe('non-numeric IDs in the path', () => {
  // An address in the path ({email} of /suppressions) is no ID: test/http/suppressions/ checks it.
  const idParams = (path: string) => (path.match(/\{[^}]+\}/g) ?? []).filter((p) => p !== '{email}')
  const withIds = operations.filter((op) => idParams(op.path).length > 0)

  it('covers every operation with a path ID (emails, templates, audiences, members, batches, webhooks)', () => {
    expect(withIds.map((op) => op.operationId).sort()).toEqual(
      [
        'addAudienceMembers',
        'cancelBatch',
        'cancelEmail',
        'deleteAudience',
        'deleteAudienceMember',
        'deleteBatch',
        'deleteTemplate',
        'getAudience',
        'getBatch',
        'getEmail',
        'getTemplate',
        'listAudienceMembers',
        'updateAudience',
        'updateEmail',
        'updateTemplate',
        'deleteWebhook',
        'getWebhook',
        'listWebhookDeliveries',
        'rotateWebhookSecret',
        'updateWebhook',
      ].sort(),
    )
  })

  const cases = withIds.flatMap((op) => {
    const params = idParams(op.path)
    return ['abc', '1.5', '-1'].flatMap((bad) =>
      params.map((param) => ({
        ...op,
        METHOD: op.method.toUpperCase(),
        bad,
        param,
        // The other path parameters get a valid value, so that only `param` is wrong.
        url: op.path.replace(/\{[^}]+\}/g, (p) => (p === param ? bad : '1')),
      })),
    )
  })

  it.each(cases)('$METHOD $path with $param = "$bad" answers 400 INVALID_ID', async (c) => {
    const { key } = await seedAccount(app, { plan: 'pro' })
    const body = VALID_BODIES[c.operationId]
    const response = await app.request(c.url, { method: c.METHOD, key, ...(body ? { body } : {}) })
    expect(await statusAndBody(response)).toEqual({
      status: 400,
      body: { code: 'INVALID_ID', message: humanText },
    })
  })
})

describe('validation failures', () => {
  it('POST /templates with name 123 answers 400 with the validation body, path ["name"]', async () => {
    const { key } = await seedAccount(app)
    const response = await app.request('/templates', { key, body: { ...template, name: 123 } })
    expect(await statusAndBody(response)).toEqual({
      status: 400,
      body: validationBody([{ path: ['name'], code: 'invalid_type' }]),
    })
  })

  it('reports every failing field, each with a path array', async () => {
    const { key } = await seedAccount(app)
    const response = await app.request('/templates', { key, body: { name: '', subject: 5, text_body: 'x' } })
    const { status, body } = await statusAndBody(response)
    expect(status).toBe(400)
    expect(body).toEqual({ success: false, error: { name: 'ZodError', issues: expect.any(Array) } })
    const issues = body.error.issues as { path: unknown[] }[]
    expect(issues.map((issue) => issue.path).sort()).toEqual([['name'], ['subject']])
    expect(issues).toEqual(
      expect.arrayContaining([
        { path: ['name'], message: humanText, code: 'too_small' },
        { path: ['subject'], message: humanText, code: 'invalid_type' },
      ]),
    )
  })
})

describe('unexpected failures', () => {
  it('answer 500 INTERNAL_ERROR without revealing internals', async () => {
    const { key } = await seedAccount(app)
    const sql = app.services.sql
    await sql`alter table templates rename to templates_gone`
    let result: { status: number; text: string }
    try {
      const response = await app.request('/templates', { key })
      result = { status: response.status, text: await response.text() }
    } finally {
      await sql`alter table templates_gone rename to templates`
    }
    expect(result.status).toBe(500)
    expect(JSON.parse(result.text)).toEqual({ code: 'INTERNAL_ERROR', message: humanText })
    for (const internal of ['templates_gone', 'relation', 'postgres', 'does not exist', '.ts:', '    at ']) {
      expect(result.text.toLowerCase()).not.toContain(internal.toLowerCase())
    }
    // The service recovers once the cause is gone.
    expect((await app.request('/templates', { key })).status).toBe(200)
  })
})
