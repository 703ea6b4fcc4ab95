/**
 * Unit tests of the SDK: error mapping, headers and URLs, with a fake `fetch` that records the
 * requests and answers canned responses. End-to-end tests against the real server live in
 * test/sdk*.test.ts.
 */
import { describe, expect, it } from 'vitest'
import {
  API_ERROR_CODES,
  API_ERRORS,
  type ApiErrorCode,
  createClient,
  isMailroomError,
  isMailroomNetworkError,
  MailroomError,
  type MailroomErrorCode,
  MailroomNetworkError,
  type Template,
} from '../src/index.js'
import { type Answer, fakeFetch, json } from './fake-fetch.js'

const BASE = 'http://127.0.0.1:3000/v1'
const KEY = 'mr_test_0123456789'

function clientAnswering(answer: Answer) {
  const fake = fakeFetch(answer)
  return { client: createClient({ baseUrl: BASE, apiKey: KEY, fetch: fake.fetch }), requests: fake.requests }
}

/** Runs `call`, expecting it to throw a MailroomError, and returns it. */
async function failure(call: () => Promise<unknown>): Promise<MailroomError> {
  try {
    await call()
  } catch (error) {
    expect(error).toBeInstanceOf(MailroomError)
    return error as MailroomError
  }
  throw new Error('expected a MailroomError')
}

const TEMPLATE: Template = {
  id: 12,
  user_id: 3,
  name: 'Renewal reminder',
  subject: 'Your plan renews soon, {{first_name}}',
  text_body: 'Hi {{first_name}}',
  html_body: null,
  created_at: '2025-01-05 10:00:00',
  updated_at: '2025-01-05 10:00:00',
}

const EMAIL = { to: 'ada@example.com', subject: 'Hi', text_body: 'Hello' }

describe('standard error bodies', () => {
  it('maps code, message, details and details.retryAfter', async () => {
    const { client } = clientAnswering(
      json(
        429,
        {
          code: 'RATE_LIMITED',
          message: 'Connection send rate exceeded; retry later',
          details: { retryAfter: 2 },
        },
        { 'Retry-After': '7' },
      ),
    )
    const error = await failure(() => client.send(EMAIL))
    expect(error.status).toBe(429)
    expect(error.code).toBe('RATE_LIMITED')
    expect(error.message).toBe('Connection send rate exceeded; retry later')
    expect(error.details).toEqual({ retryAfter: 2 })
    expect(error.retryAfter).toBe(2) // details win over the header
    expect(error.issues).toBeUndefined()
    expect(error.body).toEqual({
      code: 'RATE_LIMITED',
      message: 'Connection send rate exceeded; retry later',
      details: { retryAfter: 2 },
    })
    expect(error.name).toBe('MailroomError')
    expect(error).toBeInstanceOf(Error)
    expect(isMailroomError(error)).toBe(true)
  })

  it('falls back to the Retry-After header (QUOTA_EXCEEDED)', async () => {
    const details = { limit: 500, used: 500, resetsAt: '2025-01-16T00:00:00.000Z' }
    const { client } = clientAnswering(
      json(
        429,
        { code: 'QUOTA_EXCEEDED', message: 'Connection quota used', details },
        { 'Retry-After': '3600' },
      ),
    )
    const error = await failure(() => client.send(EMAIL))
    expect(error.code).toBe('QUOTA_EXCEEDED')
    expect(error.details).toEqual(details)
    expect(error.retryAfter).toBe(3600)
  })

  it('reads a Retry-After HTTP date as seconds from now', async () => {
    const at = new Date(Date.now() + 120_000).toUTCString()
    const { client } = clientAnswering(
      json(429, { code: 'DAILY_LIMIT_REACHED', message: 'Daily limit reached' }, { 'Retry-After': at }),
    )
    const error = await failure(() => client.send(EMAIL))
    expect(error.code).toBe('DAILY_LIMIT_REACHED')
    expect(error.details).toBeUndefined()
    expect(error.retryAfter).toBeGreaterThanOrEqual(118)
    expect(error.retryAfter).toBeLessThanOrEqual(120)
  })

  it('has no retryAfter without details.retryAfter nor header', async () => {
    const { client } = clientAnswering(json(500, { code: 'INTERNAL_ERROR', message: 'SMTP server rejected' }))
    const error = await failure(() => client.send(EMAIL))
    expect(error.code).toBe('INTERNAL_ERROR')
    expect(error.retryAfter).toBeUndefined()
  })

  it('keeps the code of FEATURE_NOT_AVAILABLE with its details', async () => {
    const body = {
      code: 'FEATURE_NOT_AVAILABLE',
      message: 'Audiences require the Pro plan',
      details: { feature: 'audiences', upgradeRequired: true },
    }
    const { client } = clientAnswering(json(403, body))
    const error = await failure(() => client.audiences.list())
    expect(error.code).toBe('FEATURE_NOT_AVAILABLE')
    expect(error.details?.feature).toBe('audiences')
    expect(error.details?.upgradeRequired).toBe(true)
  })

  it('passes an unknown code through as is', async () => {
    const { client } = clientAnswering(json(409, { code: 'SOMETHING_NEW', message: 'new' }))
    const error = await failure(() => client.templates.list())
    expect(error.code).toBe('SOMETHING_NEW')
  })
})

describe('simple error bodies', () => {
  it('maps 401 with the bad-key text to INVALID_API_KEY', async () => {
    const { client } = clientAnswering(json(401, { error: 'Invalid or expired API token' }))
    const error = await failure(() => client.templates.list())
    expect(error.status).toBe(401)
    expect(error.code).toBe('INVALID_API_KEY')
    expect(error.message).toBe('Invalid or expired API token')
    expect(error.body).toEqual({ error: 'Invalid or expired API token' })
    expect(error.details).toBeUndefined()
  })

  it('maps 401 with the missing-header text to MISSING_AUTHORIZATION', async () => {
    const { client } = clientAnswering(json(401, { error: 'Missing or invalid Authorization header' }))
    expect((await failure(() => client.send(EMAIL))).code).toBe('MISSING_AUTHORIZATION')
  })

  it('maps 403 Access denied to ACCESS_DENIED', async () => {
    const { client } = clientAnswering(json(403, { error: 'Access denied' }))
    const error = await failure(() => client.templates.get(12))
    expect(error.status).toBe(403)
    expect(error.code).toBe('ACCESS_DENIED')
    expect(error.message).toBe('Access denied')
  })

  it('maps the template limit body to TEMPLATE_LIMIT_REACHED with details', async () => {
    const body = {
      error: 'Template limit reached',
      limit: 3,
      used: 3,
      upgradeRequired: true,
      message: 'The Free plan can keep 3 templates. Upgrade to Pro for unlimited templates.',
    }
    const { client } = clientAnswering(json(403, body))
    const error = await failure(() =>
      client.templates.create({ name: 'Fourth', subject: 'Hello', text_body: 'Hi' }),
    )
    expect(error.status).toBe(403)
    expect(error.code).toBe('TEMPLATE_LIMIT_REACHED')
    expect(error.message).toBe(body.message)
    expect(error.details).toEqual({ limit: 3, used: 3, upgradeRequired: true })
    expect(error.body).toEqual(body)
  })

  it('maps 404 {error: Template not found} to TEMPLATE_NOT_FOUND', async () => {
    const { client } = clientAnswering(json(404, { error: 'Template not found' }))
    const error = await failure(() => client.templates.delete(99))
    expect(error.code).toBe('TEMPLATE_NOT_FOUND')
    expect(error.message).toBe('Template not found')
  })

  it('maps the batch audience checks to INVALID_AUDIENCE and AUDIENCE_HAS_NO_MEMBERS', async () => {
    const batch = { template_id: 12, audience_id: 7 }
    const invalid = clientAnswering(json(400, { error: 'Invalid audience' }))
    expect((await failure(() => invalid.client.batches.create(batch))).code).toBe('INVALID_AUDIENCE')
    const empty = clientAnswering(json(400, { error: 'Audience has no members' }))
    expect((await failure(() => empty.client.batches.create(batch))).code).toBe('AUDIENCE_HAS_NO_MEMBERS')
  })

  it('maps another simple body to HTTP_<status>', async () => {
    const { client } = clientAnswering(json(400, { error: 'Something else' }))
    expect((await failure(() => client.batches.create({ template_id: 1, audience_id: 2 }))).code).toBe(
      'HTTP_400',
    )
  })
})

describe('validation and unknown bodies', () => {
  it('maps the validation body to VALIDATION_ERROR with issues', async () => {
    const issues = [
      { path: ['subject'], message: 'Too small: expected string to have >=1 characters', code: 'too_small' },
      { path: ['emails', 0, 'to'], message: 'Invalid email address', code: 'invalid_format' },
    ]
    const { client } = clientAnswering(json(400, { success: false, error: { name: 'ZodError', issues } }))
    const error = await failure(() => client.send({ to: 'ada@example.com', subject: '', text_body: 'x' }))
    expect(error.status).toBe(400)
    expect(error.code).toBe('VALIDATION_ERROR')
    expect(error.issues).toEqual(issues)
    expect(error.details).toBeUndefined()
    expect(error.message).toContain('subject: Too small')
    expect(error.message).toContain('emails.0.to: Invalid email address')
  })

  it('maps a non-JSON body to HTTP_<status> and keeps the text', async () => {
    const { client } = clientAnswering(new Response('<html>Bad gateway</html>', { status: 502 }))
    const error = await failure(() => client.templates.list())
    expect(error.status).toBe(502)
    expect(error.code).toBe('HTTP_502')
    expect(error.body).toBe('<html>Bad gateway</html>')
  })

  it('maps an empty body to HTTP_<status>, also on a 401 (no text to match)', async () => {
    const empty = clientAnswering(new Response(null, { status: 503, headers: { 'Content-Length': '0' } }))
    const error = await failure(() => empty.client.templates.list())
    expect(error.code).toBe('HTTP_503')
    expect(error.body).toBeUndefined()
    const unauthorized = clientAnswering(new Response(null, { status: 401 }))
    expect((await failure(() => unauthorized.client.templates.list())).code).toBe('HTTP_401')
  })

  it('lets a caller switch on the code', async () => {
    const { client } = clientAnswering(
      json(429, { code: 'RATE_LIMITED', message: 'slow down' }, { 'Retry-After': '1' }),
    )
    const error = await failure(() => client.send(EMAIL))
    const code: MailroomErrorCode | (string & {}) = error.code
    let action = 'other'
    switch (code) {
      case 'RATE_LIMITED':
      case 'QUOTA_EXCEEDED':
        action = `wait ${error.retryAfter}`
        break
      case 'INTERNAL_ERROR':
        action = 'fix'
        break
    }
    expect(action).toBe('wait 1')
  })
})

/** A body of the entry's shape, as the API answers it. */
function bodyOf(code: ApiErrorCode): unknown {
  const entry = API_ERRORS[code]
  switch (entry.body) {
    case 'standard':
      return { code, message: 'Human text that may change' }
    case 'simple':
      return { error: entry.error }
    case 'template-limit':
      return { error: entry.error, limit: 3, used: 3, upgradeRequired: true, message: 'Upgrade to Pro' }
    case 'validation':
      return { success: false, error: { name: 'ZodError', issues: [] } }
  }
}

describe('the error catalog', () => {
  it('is the list of codes, the same as the generated API_ERRORS', () => {
    expect(API_ERROR_CODES).toEqual(Object.keys(API_ERRORS))
    expect(API_ERROR_CODES).toEqual(
      expect.arrayContaining([
        'MISSING_AUTHORIZATION',
        'INVALID_API_KEY',
        'ACCESS_DENIED',
        'TEMPLATE_NOT_FOUND',
      ]),
    )
    expect(API_ERROR_CODES).not.toContain('UNAUTHORIZED')
  })

  it.each(API_ERROR_CODES)('%s: its body shape at its status gives its code', async (code) => {
    const { status } = API_ERRORS[code]
    const { client } = clientAnswering(json(status, bodyOf(code)))
    const error = await failure(() => client.templates.list())
    expect(error.status).toBe(status)
    expect(error.code).toBe(code)
  })

  it.each([
    [403, 'access denied'],
    [403, 'ACCESS DENIED'],
    [403, 'Access denied.'],
    [403, ' Access denied'],
    [401, 'invalid or expired API token'],
    [404, 'Template not found.'],
    [400, 'Invalid  audience'],
  ])('%i {error: %j} is HTTP_<status>: texts are matched exactly, never normalised', async (status, text) => {
    const { client } = clientAnswering(json(status, { error: text }))
    expect((await failure(() => client.templates.list())).code).toBe(`HTTP_${status}`)
  })

  it.each([
    [404, { error: 'Access denied' }],
    [400, { error: 'Template not found' }],
    [401, { error: 'Access denied' }],
    [400, { error: 'Template limit reached', limit: 3, used: 3, upgradeRequired: true, message: 'x' }],
    [422, { success: false, error: { name: 'ZodError', issues: [] } }],
  ])('a catalogued shape or text at another status (%i) is HTTP_<status>', async (status, body) => {
    const { client } = clientAnswering(json(status, body))
    expect((await failure(() => client.templates.list())).code).toBe(`HTTP_${status}`)
  })

  it('takes the template limit by its shape, not its text', async () => {
    const body = { error: 'Template quota hit', limit: 5, used: 5, upgradeRequired: false, message: 'Limit' }
    const { client } = clientAnswering(json(403, body))
    const error = await failure(() => client.templates.create({ name: 'n', subject: 's', text_body: 't' }))
    expect(error.code).toBe('TEMPLATE_LIMIT_REACHED')
    expect(error.details).toEqual({ limit: 5, used: 5, upgradeRequired: false })
  })
})

describe('network failures', () => {
  it('throw a MailroomNetworkError NETWORK_ERROR with the fetch rejection as its cause', async () => {
    const cause = new TypeError('fetch failed', { cause: new Error('read ECONNRESET') })
    const client = createClient({
      baseUrl: BASE,
      apiKey: KEY,
      fetch: async () => {
        throw cause
      },
    })
    const rejection = await client.send(EMAIL, { idempotencyKey: 'k1' }).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(rejection).toBeInstanceOf(MailroomNetworkError)
    const error = rejection as MailroomNetworkError
    expect(error.name).toBe('MailroomNetworkError')
    expect(error.code).toBe('NETWORK_ERROR')
    expect(error.cause).toBe(cause)
    expect(error.message).toBe('POST /send failed without a response (read ECONNRESET)')
    expect([error.method, error.path, error.idempotencyKey]).toEqual(['POST', '/send', 'k1'])
    expect(isMailroomNetworkError(error)).toBe(true)
    expect(isMailroomError(error)).toBe(false)
  })
})

describe('success bodies and requests', () => {
  it('returns the typed success body', async () => {
    const { client } = clientAnswering(json(201, { success: true, template: TEMPLATE }))
    const created = await client.templates.create({
      name: 'Renewal reminder',
      subject: 'Hi',
      text_body: 'Hello',
    })
    expect(created.success).toBe(true)
    const template: Template = created.template
    expect(template).toEqual(TEMPLATE)
  })

  it('returns the send response', async () => {
    const body = {
      success: true,
      messageId: '<a@b>',
      outboxId: 1337,
      from: 'billing@acme.example',
      message: 'ok',
    }
    const { client, requests } = clientAnswering(json(200, body))
    const sent = await client.send(EMAIL)
    expect(sent.outboxId).toBe(1337)
    expect(sent).toEqual(body)
    const request = requests[0] as Request
    expect(request.method).toBe('POST')
    expect(request.url).toBe(`${BASE}/send`)
    expect(request.headers.get('content-type')).toBe('application/json')
    expect(await request.json()).toEqual(EMAIL)
    expect(request.headers.has('idempotency-key')).toBe(false)
  })

  it('sends the Idempotency-Key header', async () => {
    const { client, requests } = clientAnswering(json(200, { success: true, outboxId: 1, message: 'ok' }))
    await client.send(EMAIL, { idempotencyKey: '7f9c2ba4-e88f-4a1e-9c0b-2d6b5f1e3a10' })
    expect(requests[0]?.headers.get('Idempotency-Key')).toBe('7f9c2ba4-e88f-4a1e-9c0b-2d6b5f1e3a10')
  })

  it('sends the bearer header on every request, and extra headers', async () => {
    const fake = fakeFetch(() => json(200, { success: true, templates: [] }))
    const client = createClient({
      baseUrl: BASE,
      apiKey: KEY,
      fetch: fake.fetch,
      headers: { 'X-Trace': 'abc' },
    })
    await client.templates.list()
    await client.templates.list({ headers: { 'X-Call': '1' } })
    await client.raw.GET('/templates')
    expect(fake.requests).toHaveLength(3)
    for (const request of fake.requests) {
      expect(request.headers.get('Authorization')).toBe(`Bearer ${KEY}`)
      expect(request.headers.get('X-Trace')).toBe('abc')
    }
    expect(fake.requests[1]?.headers.get('X-Call')).toBe('1')
  })

  it('keeps the bearer header even if extra headers carry another Authorization', async () => {
    const fake = fakeFetch(() => json(200, { success: true, templates: [] }))
    const client = createClient({
      baseUrl: BASE,
      apiKey: KEY,
      fetch: fake.fetch,
      headers: { authorization: 'Basic xyz' },
    })
    await client.templates.list()
    expect(fake.requests[0]?.headers.get('Authorization')).toBe(`Bearer ${KEY}`)
  })

  it.each([BASE, `${BASE}/`, `${BASE}//`])('baseUrl %s hits <base>/templates', async (baseUrl) => {
    const fake = fakeFetch(() => json(200, { success: true, templates: [] }))
    const client = createClient({ baseUrl, apiKey: KEY, fetch: fake.fetch })
    const list = await client.templates.list()
    expect(list.templates).toEqual([])
    expect(fake.requests[0]?.url).toBe('http://127.0.0.1:3000/v1/templates')
    expect(fake.requests[0]?.method).toBe('GET')
    expect(client.baseUrl).toBe(BASE)
  })

  it('builds the path, query and method of every operation', async () => {
    const fake = fakeFetch(() => json(200, { success: true }))
    const client = createClient({ baseUrl: BASE, apiKey: KEY, fetch: fake.fetch })
    await client.enqueue(EMAIL)
    await client.batches.create({ emails: [{ to: 'a@example.com', subject: 's', html_body: '<p>x</p>' }] })
    await client.batches.get(42)
    await client.batches.delete(42)
    await client.audiences.list()
    await client.audiences.create({ name: 'Customers' })
    await client.audiences.get(7)
    await client.audiences.update(7, { name: 'Paying customers' })
    await client.audiences.delete(7)
    await client.audiences.members.list(7, { limit: 50, offset: 100 })
    await client.audiences.members.list(7)
    await client.audiences.members.add(7, {
      members: [{ email: 'ada@example.com', payload: { first_name: 'Ada' } }],
    })
    await client.audiences.members.delete(7, 501)
    await client.templates.list()
    await client.templates.get(12)
    await client.templates.update(12, { subject: 'New' })
    await client.templates.delete(12)
    const seen = fake.requests.map((request) => `${request.method} ${request.url.slice(BASE.length)}`)
    expect(seen).toEqual([
      'POST /enqueue',
      'POST /send/batch',
      'GET /batches/42',
      'DELETE /batches/42',
      'GET /audiences',
      'POST /audiences',
      'GET /audiences/7',
      'PUT /audiences/7',
      'DELETE /audiences/7',
      'GET /audiences/7/members?limit=50&offset=100',
      'GET /audiences/7/members',
      'POST /audiences/7/members',
      'DELETE /audiences/7/members/501',
      'GET /templates',
      'GET /templates/12',
      'PUT /templates/12',
      'DELETE /templates/12',
    ])
    expect(await fake.requests[11]?.json()).toEqual({
      members: [{ email: 'ada@example.com', payload: { first_name: 'Ada' } }],
    })
  })

  it('gives the raw client {data, error, response} without throwing', async () => {
    const { client } = clientAnswering(json(404, { error: 'Template not found' }))
    const { data, error, response } = await client.raw.GET('/templates/{id}', { params: { path: { id: 5 } } })
    expect(data).toBeUndefined()
    expect(error).toEqual({ error: 'Template not found' })
    expect(response.status).toBe(404)
  })

  it('rejects a missing baseUrl or apiKey', () => {
    expect(() => createClient({ baseUrl: '', apiKey: KEY })).toThrow(TypeError)
    expect(() => createClient({ baseUrl: BASE, apiKey: '' })).toThrow(TypeError)
  })
})
