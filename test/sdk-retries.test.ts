/**
 * The SDK's retry guidance and timeout against the real server: a response lost after the mail
 * was sent (through a proxy that cuts it off), a 429 from the connection's pacing, errors that
 * must not be retried, and an SMTP server slower than the client's timeout. HTTP requests are
 * counted with a `fetch` that records them; emails with the SMTP sinks.
 */
import {
  createClient,
  type FetchLike,
  type MailroomClientOptions,
  MailroomError,
  MailroomNetworkError,
} from '@mailroom/sdk'
import { afterAll, describe, expect, it } from 'vitest'
import { seedAccount, useTestApp } from './support/app.ts'
import { type LossyProxy, startLossyProxy } from './support/lossy-proxy.ts'
import { waitFor } from './support/queue.ts'
import { fresh, replayOf, type SenderOptions, startSender } from './support/sending.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

// The SDK talks HTTP: a listening server.
const app = useTestApp({}, { listen: true })
const proxies: LossyProxy[] = []

afterAll(async () => {
  await Promise.all(proxies.map((proxy) => proxy.close()))
})

let seq = 0

function email() {
  return { to: 'rcpt@example.com', subject: `SDK retries ${++seq}`, text_body: 'Hello' }
}

interface Attempt {
  method: string
  url: string
  idempotencyKey: string | null
  /** The answer's status, or `undefined` when the request got none. */
  status?: number
}

/** A fetch that records every HTTP request the SDK makes, and the status it got. */
function countingFetch() {
  const attempts: Attempt[] = []
  const fetch: FetchLike = async (request) => {
    const attempt: Attempt = {
      method: request.method,
      url: request.url,
      idempotencyKey: request.headers.get('Idempotency-Key'),
    }
    attempts.push(attempt)
    const response = await globalThis.fetch(request)
    attempt.status = response.status
    return response
  }
  return { fetch, attempts }
}

/** A client with a counting fetch; `baseUrl` defaults to the app's. */
function client(apiKey: string, options: Partial<MailroomClientOptions> = {}) {
  const counter = countingFetch()
  const mailroom = createClient({ baseUrl: app.baseUrl, apiKey, fetch: counter.fetch, ...options })
  return { mailroom, attempts: counter.attempts }
}

function sender(label: string, options: SenderOptions = {}) {
  return startSender(app, label, options)
}

async function lossyProxy(): Promise<LossyProxy> {
  const proxy = await startLossyProxy(app.url, { lose: 1 })
  proxies.push(proxy)
  return proxy
}

async function rejection(call: () => Promise<unknown>): Promise<unknown> {
  return call().then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`)
    },
    (error: unknown) => error,
  )
}

describe('a /send whose response is lost after the mail was sent', () => {
  it('with retries, is retried under the same SDK-made key and replayed: exactly one email', async () => {
    const s = await sender('lost')
    const proxy = await lossyProxy()
    const { mailroom, attempts } = client(s.key, { baseUrl: proxy.baseUrl, retries: 2 })

    const sent = await mailroom.send(email())

    expect(proxy.lost).toBe(1)
    expect(sent).toEqual(replayOf(fresh(s.from)))
    expect(sent.replayed).toBe(true)
    expect(attempts.map((a) => a.status)).toEqual([undefined, 200])
    const [first, second] = attempts
    expect(first?.idempotencyKey).toMatch(UUID)
    expect(second?.idempotencyKey).toBe(first?.idempotencyKey)
    expect(s.sink.messages).toHaveLength(1)

    // The next call gets a key of its own, and its email is a new one.
    const next = await mailroom.send(email())
    expect(next).toEqual(fresh(s.from))
    expect(attempts[2]?.idempotencyKey).toMatch(UUID)
    expect(attempts[2]?.idempotencyKey).not.toBe(first?.idempotencyKey)
    expect(attempts).toHaveLength(3)
    expect(s.sink.messages).toHaveLength(2)
  })

  it('with retries: 0, throws NETWORK_ERROR; the one email was sent, and its key replays it', async () => {
    const s = await sender('lost0')
    const proxy = await lossyProxy()
    const { mailroom, attempts } = client(s.key, { baseUrl: proxy.baseUrl })
    const idempotencyKey = `lost-${process.pid}-${Date.now()}`

    const error = await rejection(() => mailroom.send(email(), { idempotencyKey }))

    expect(error).toBeInstanceOf(MailroomNetworkError)
    expect((error as MailroomNetworkError).code).toBe('NETWORK_ERROR')
    expect((error as MailroomNetworkError).idempotencyKey).toBe(idempotencyKey)
    expect(proxy.lost).toBe(1)
    expect(attempts).toHaveLength(1)
    expect(await s.sink.waitForMessages(1)).toHaveLength(1)

    // The caller retries on its own with the key: the outcome is replayed, nothing is sent again.
    const replay = await mailroom.send(email(), { idempotencyKey })
    expect(replay).toEqual(replayOf(fresh(s.from)))
    expect(s.sink.messages).toHaveLength(1)
  })
})

describe('429: wait Retry-After and try again', () => {
  /**
   * Empties the connection's pacing bucket now. At 20 emails a minute a token is due in 3 s, so
   * the first attempt is refused with Retry-After 3 however loaded the machine (ten real sends
   * to drain a bucket could take long enough for a token to come back).
   */
  async function emptyBucket(connectionId: number): Promise<void> {
    await app.services.sql`
      insert into connection_pacing (connection_id, tokens, refilled_at) values (${connectionId}, 0, now())
      on conflict (connection_id) do update set tokens = 0, refilled_at = now()`
  }

  it('with retries: 1, waits the Retry-After seconds and sends', async () => {
    const s = await sender('paced', { rate: 20 })
    await emptyBucket(s.connectionId)
    const { mailroom, attempts } = client(s.key, { retries: 1 })

    const started = Date.now()
    const sent = await mailroom.send(email())

    expect(sent).toEqual(fresh(s.from))
    expect(attempts.map((a) => a.status)).toEqual([429, 200])
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_900)
    expect(s.sink.messages).toHaveLength(1)
  })

  it('with retries: 0, throws RATE_LIMITED with its retryAfter', async () => {
    const s = await sender('paced0', { rate: 20 })
    await emptyBucket(s.connectionId)
    const { mailroom, attempts } = client(s.key)

    const error = await rejection(() => mailroom.send(email()))

    expect(error).toBeInstanceOf(MailroomError)
    expect((error as MailroomError).code).toBe('RATE_LIMITED')
    expect((error as MailroomError).retryAfter).toBe(3)
    expect(attempts).toHaveLength(1)
    expect(s.sink.messages).toHaveLength(0)
  })

  it('throws at once when Retry-After is longer than maxRetryDelayMs', async () => {
    const s = await sender('pacedmax', { rate: 20 })
    await emptyBucket(s.connectionId)
    const { mailroom, attempts } = client(s.key, { retries: 3, maxRetryDelayMs: 2_000 })

    const error = await rejection(() => mailroom.send(email()))

    expect((error as MailroomError).code).toBe('RATE_LIMITED')
    expect((error as MailroomError).retryAfter).toBe(3)
    expect(attempts).toHaveLength(1)
    expect(s.sink.messages).toHaveLength(0)
  })
})

describe('nothing else is retried, even with retries: 3', () => {
  it('500 (the SMTP server refuses), 400, 403 and 404 are each requested once', async () => {
    const s = await sender('refused', {
      behaviour: { rejectData: { code: 554, message: '5.7.1 Message rejected as spam' } },
    })
    const { mailroom, attempts } = client(s.key, { retries: 3 })
    const recipients = Array.from({ length: 11 }, (_, i) => `rcpt${i}@example.com`)
    const cases: [() => Promise<unknown>, number, string][] = [
      [() => mailroom.send(email()), 500, 'INTERNAL_ERROR'],
      [() => mailroom.send({ ...email(), to: recipients }), 400, 'TOO_MANY_RECIPIENTS'],
      [() => mailroom.send({ ...email(), to: 'not an address' }), 400, 'VALIDATION_ERROR'],
      [() => mailroom.audiences.list(), 403, 'FEATURE_NOT_AVAILABLE'],
      [() => mailroom.templates.get(999_999), 404, 'TEMPLATE_NOT_FOUND'],
    ]
    for (const [call, status, code] of cases) {
      const before = attempts.length
      const error = await rejection(call)
      expect(error).toBeInstanceOf(MailroomError)
      expect([(error as MailroomError).status, (error as MailroomError).code]).toEqual([status, code])
      expect(attempts.slice(before).map((a) => a.status)).toEqual([status])
    }
    expect(s.sink.messages).toHaveLength(0)
  })

  it('a lost response of another operation is not retried: the template exists once', async () => {
    const owner = await seedAccount(app)
    const proxy = await lossyProxy()
    const { mailroom, attempts } = client(owner.key, { baseUrl: proxy.baseUrl, retries: 3 })

    const error = await rejection(() =>
      mailroom.templates.create({ name: 'Once', subject: 'Hi', text_body: 'Hello' }),
    )

    expect(error).toBeInstanceOf(MailroomNetworkError)
    expect((error as MailroomNetworkError).code).toBe('NETWORK_ERROR')
    expect(attempts).toHaveLength(1)
    expect(proxy.lost).toBe(1)
    const { templates } = await mailroom.templates.list()
    expect(templates.map((t) => t.name)).toEqual(['Once'])
  })
})

describe('timeout', () => {
  // The sink answers DATA 6 s late; the client gives each attempt 1 s.
  const slow = { behaviour: { dataDelayMs: 6_000 } }

  it('fails a send that outlasts timeoutMs with TIMEOUT; the server still sends the email once', async () => {
    const s = await sender('slow', slow)
    const { mailroom, attempts } = client(s.key, { timeoutMs: 1_000 })

    const error = await rejection(() => mailroom.send(email()))

    expect(error).toBeInstanceOf(MailroomNetworkError)
    expect((error as MailroomNetworkError).code).toBe('TIMEOUT')
    expect(attempts).toHaveLength(1)
    expect(await s.sink.waitForMessages(1, 15_000)).toHaveLength(1)
  })

  it('retries a timed-out send under the same key: still in flight, so IDEMPOTENCY_KEY_IN_FLIGHT; later it replays', async () => {
    const s = await sender('slowretry', slow)
    const { mailroom, attempts } = client(s.key, { timeoutMs: 1_000, retries: 1 })

    const error = await rejection(() => mailroom.send(email()))

    // The first attempt timed out while the server waited on SMTP; the retry, with the same key,
    // found that request still running (rule 3 of Idempotency-Key) and is not retried again.
    expect(error).toBeInstanceOf(MailroomError)
    expect((error as MailroomError).code).toBe('IDEMPOTENCY_KEY_IN_FLIGHT')
    expect(attempts.map((a) => a.status)).toEqual([undefined, 400])
    const key = (error as MailroomError).idempotencyKey
    expect(key).toMatch(UUID)
    expect(attempts.map((a) => a.idempotencyKey)).toEqual([key, key])

    // Once the SMTP server accepted it and the service recorded so, the same key replays the one email.
    await s.sink.waitForMessages(1, 15_000)
    await waitFor('the attempt recorded sent', async () => {
      const [row] = await app.services.sql<{ status: string }[]>`
        select status from outbox where connection_id = ${s.connectionId}`
      return row?.status === 'sent' ? true : undefined
    })
    const replay = await mailroom.send(email(), { idempotencyKey: key })
    expect(replay).toEqual(replayOf(fresh(s.from)))
    expect(s.sink.messages).toHaveLength(1)
  })
})
