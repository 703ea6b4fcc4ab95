/**
 * Unit tests of the retry guidance and the timeout, with a fake `fetch`. The same rules are
 * proved against the real server (and a proxy that loses responses) in test/sdk-retries.test.ts.
 */
import { describe, expect, it, vi } from 'vitest'
import {
  createClient,
  type FetchLike,
  type MailroomClientOptions,
  MailroomError,
  MailroomNetworkError,
} from '../src/index.js'
import { type Answer, BASE, EMAIL, fakeFetch, json, KEY } from './fake-fetch.js'

const SENT = { success: true, outboxId: 1, message: 'Email sent successfully' }
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

function rateLimited(retryAfter: string | undefined): Response {
  return json(
    429,
    { code: 'RATE_LIMITED', message: 'slow down' },
    retryAfter ? { 'Retry-After': retryAfter } : {},
  )
}

/** Answers `answers` in turn (the last one again when they run out), recording the requests. */
function sequence(answers: (Answer | Error)[], options: Partial<MailroomClientOptions> = {}) {
  let next = 0
  const fake = fakeFetch((request) => {
    const answer = answers[Math.min(next++, answers.length - 1)] as Answer | Error
    if (answer instanceof Error) throw answer
    return typeof answer === 'function' ? answer(request) : answer.clone()
  })
  const client = createClient({ baseUrl: BASE, apiKey: KEY, fetch: fake.fetch, ...options })
  return { client, requests: fake.requests }
}

/** A fetch that never answers: it rejects only when the request's signal aborts. */
const silent: FetchLike = (request) =>
  new Promise((_resolve, reject) => {
    request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true })
  })

async function rejection(call: () => Promise<unknown>): Promise<unknown> {
  return call().then(
    () => {
      throw new Error('expected a rejection')
    },
    (error: unknown) => error,
  )
}

const networkFailure = () => new TypeError('fetch failed', { cause: new Error('socket hang up') })

describe('429: wait Retry-After, then try again', () => {
  it('retries up to `retries` times, then throws the 429', async () => {
    const { client, requests } = sequence([rateLimited('0')], { retries: 2 })
    const error = await rejection(() => client.templates.list())
    expect(error).toBeInstanceOf(MailroomError)
    expect((error as MailroomError).code).toBe('RATE_LIMITED')
    expect(requests).toHaveLength(3)
  })

  it('succeeds when a retry gets through, on any operation', async () => {
    const { client, requests } = sequence([rateLimited('0'), json(200, { success: true, templates: [] })], {
      retries: 1,
    })
    expect(await client.templates.list()).toEqual({ success: true, templates: [] })
    expect(requests).toHaveLength(2)
  })

  it('waits the Retry-After seconds before the retry', async () => {
    const { client, requests } = sequence([rateLimited('1'), json(200, SENT)], { retries: 1 })
    const started = performance.now()
    await client.send(EMAIL)
    expect(performance.now() - started).toBeGreaterThanOrEqual(990)
    expect(requests).toHaveLength(2)
  })

  it('prefers details.retryAfter to the header', async () => {
    const body = { code: 'RATE_LIMITED', message: 'slow down', details: { retryAfter: 120 } }
    const { client, requests } = sequence([json(429, body, { 'Retry-After': '0' })], {
      retries: 1,
      maxRetryDelayMs: 60_000,
    })
    const error = await rejection(() => client.send(EMAIL))
    expect((error as MailroomError).retryAfter).toBe(120)
    expect(requests).toHaveLength(1)
  })

  it('throws at once when the wait exceeds maxRetryDelayMs', async () => {
    const { client, requests } = sequence([rateLimited('5'), json(200, SENT)], {
      retries: 3,
      maxRetryDelayMs: 4_999,
    })
    const started = performance.now()
    const error = await rejection(() => client.send(EMAIL))
    expect((error as MailroomError).retryAfter).toBe(5)
    expect(requests).toHaveLength(1)
    expect(performance.now() - started).toBeLessThan(4_000)
  })

  it('throws at once when the 429 says nothing about when to retry', async () => {
    const { client, requests } = sequence([rateLimited(undefined), json(200, SENT)], { retries: 3 })
    expect(((await rejection(() => client.send(EMAIL))) as MailroomError).status).toBe(429)
    expect(requests).toHaveLength(1)
  })

  it('does not retry with retries: 0 (the default)', async () => {
    const { client, requests } = sequence([rateLimited('0'), json(200, SENT)])
    expect(((await rejection(() => client.send(EMAIL))) as MailroomError).code).toBe('RATE_LIMITED')
    expect(requests).toHaveLength(1)
  })

  it('stops waiting when the caller aborts', async () => {
    const { client, requests } = sequence([rateLimited('30'), json(200, SENT)], { retries: 1 })
    const controller = new AbortController()
    const pending = rejection(() => client.templates.list({ signal: controller.signal }))
    setTimeout(() => controller.abort(new Error('caller gave up')), 50)
    expect(await pending).toEqual(new Error('caller gave up'))
    expect(requests).toHaveLength(1)
  })
})

describe('send without any response: retried with the same Idempotency-Key', () => {
  it('retries a network failure with the caller’s key', async () => {
    const { client, requests } = sequence([networkFailure(), networkFailure(), json(200, SENT)], {
      retries: 2,
    })
    expect(await client.send(EMAIL, { idempotencyKey: 'order-4711' })).toEqual(SENT)
    expect(requests.map((r) => r.headers.get('Idempotency-Key'))).toEqual([
      'order-4711',
      'order-4711',
      'order-4711',
    ])
  })

  it('makes one key per call when the caller gave none, the same on every attempt', async () => {
    const { client, requests } = sequence([networkFailure(), json(200, SENT)], { retries: 1 })
    await client.send(EMAIL)
    await client.send(EMAIL)
    const keys = requests.map((r) => r.headers.get('Idempotency-Key'))
    expect(keys).toHaveLength(3)
    expect(keys[0]).toMatch(UUID)
    expect(keys[1]).toBe(keys[0])
    expect(keys[2]).toMatch(UUID)
    expect(keys[2]).not.toBe(keys[0])
  })

  it('keeps a key given through plain headers, whatever its case', async () => {
    const { client, requests } = sequence([networkFailure(), json(200, SENT)], { retries: 1 })
    await client.send(EMAIL, { headers: { 'idempotency-key': 'from-headers' } })
    expect(requests.map((r) => r.headers.get('Idempotency-Key'))).toEqual(['from-headers', 'from-headers'])
  })

  it('sends no key of its own with retries: 0', async () => {
    const { client, requests } = sequence([json(200, SENT)])
    await client.send(EMAIL)
    expect(requests[0]?.headers.has('Idempotency-Key')).toBe(false)
  })

  it('gives up after `retries` attempts with the network error, naming the key', async () => {
    const { client, requests } = sequence([networkFailure()], { retries: 2 })
    const error = await rejection(() => client.send(EMAIL))
    expect(error).toBeInstanceOf(MailroomNetworkError)
    expect((error as MailroomNetworkError).code).toBe('NETWORK_ERROR')
    expect((error as MailroomNetworkError).idempotencyKey).toMatch(UUID)
    expect((error as MailroomNetworkError).idempotencyKey).toBe(requests[0]?.headers.get('Idempotency-Key'))
    expect(requests).toHaveLength(3)
  })

  it('shares one budget between 429 and network retries', async () => {
    const { client, requests } = sequence([rateLimited('0'), networkFailure(), json(200, SENT)], {
      retries: 1,
    })
    expect(await rejection(() => client.send(EMAIL))).toBeInstanceOf(MailroomNetworkError)
    expect(requests).toHaveLength(2)
  })
})

describe('nothing else is retried', () => {
  it.each([
    [500, { code: 'INTERNAL_ERROR', message: 'SMTP server rejected the message' }],
    [503, 'Service unavailable'],
    [400, { code: 'TOO_MANY_RECIPIENTS', message: 'too many' }],
    [403, { code: 'CONNECTION_PAUSED', message: 'paused' }],
    [404, { error: 'Template not found' }],
  ])('a %i is thrown after one request', async (status, body) => {
    const { client, requests } = sequence([json(status, body, { 'Retry-After': '0' }), json(200, SENT)], {
      retries: 3,
    })
    expect(((await rejection(() => client.send(EMAIL))) as MailroomError).status).toBe(status)
    expect(requests).toHaveLength(1)
  })

  it('a network failure of any other operation is thrown after one request', async () => {
    const { client, requests } = sequence([networkFailure(), json(201, { success: true })], { retries: 3 })
    const error = await rejection(() => client.templates.create({ name: 'n', subject: 's', text_body: 't' }))
    expect((error as MailroomNetworkError).code).toBe('NETWORK_ERROR')
    expect((error as MailroomNetworkError).idempotencyKey).toBeUndefined()
    expect(requests).toHaveLength(1)
  })

  it('the caller’s abort is thrown as is, without a retry', async () => {
    const { client, requests } = sequence([silent, json(200, SENT)], { retries: 3 })
    const controller = new AbortController()
    const reason = new Error('shutting down')
    const aborted = rejection(() => client.send(EMAIL, { signal: controller.signal }))
    setTimeout(() => controller.abort(reason), 50)
    expect(await aborted).toBe(reason)
    expect(requests).toHaveLength(1)
  })
})

describe('timeout', () => {
  it('fails an attempt that takes longer than timeoutMs with TIMEOUT', async () => {
    const { client, requests } = sequence([silent], { timeoutMs: 100 })
    const error = await rejection(() => client.templates.list())
    expect(error).toBeInstanceOf(MailroomNetworkError)
    expect((error as MailroomNetworkError).code).toBe('TIMEOUT')
    expect((error as MailroomNetworkError).message).toBe('GET /templates timed out after 100 ms')
    expect(requests).toHaveLength(1)
  })

  it('gives every attempt of send its own timeout, with the same key', async () => {
    const { client, requests } = sequence([silent, silent, json(200, SENT)], { timeoutMs: 100, retries: 2 })
    expect(await client.send(EMAIL)).toEqual(SENT)
    expect(requests).toHaveLength(3)
    expect(new Set(requests.map((r) => r.headers.get('Idempotency-Key'))).size).toBe(1)
  })

  it('is 60 s by default, one per attempt', async () => {
    const timeout = vi.spyOn(AbortSignal, 'timeout')
    try {
      const { client } = sequence([networkFailure(), json(200, SENT)], { retries: 1 })
      await client.send(EMAIL)
      expect(timeout.mock.calls).toEqual([[60_000], [60_000]])
    } finally {
      timeout.mockRestore()
    }
  })
})

describe('options', () => {
  it.each([
    { retries: -1 },
    { retries: 1.5 },
    { timeoutMs: 0 },
    { timeoutMs: 2 ** 31 },
    { timeoutMs: Number.NaN },
    { maxRetryDelayMs: -1 },
  ])('rejects %j', (options) => {
    expect(() => createClient({ baseUrl: BASE, apiKey: KEY, ...options })).toThrow(TypeError)
  })
})
