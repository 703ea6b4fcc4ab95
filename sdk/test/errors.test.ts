/**
 * Unit tests of the SDK's error mapping: every error body the API answers becomes a MailroomError
 * with its code, and a failed fetch a MailroomNetworkError, with a fake `fetch` that answers
 * canned responses. End-to-end tests against the real server live in
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
} from '../src/index.js'
import { BASE, clientAnswering, EMAIL, json, KEY } from './fake-fetch.js'

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
