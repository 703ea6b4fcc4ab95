/**
 * POST /send against the limits: the Free plan's daily limit, a connection's quota and its
 * pacing bucket, set with SQL and read back, and the answers and Retry-After a refusal gives.
 */
import { expect } from 'vitest'
import type { TestApp } from './app.ts'
import {
  type Body,
  fresh,
  postSend,
  type Reply,
  type Sender,
  type SenderOptions,
  startSender,
} from './sending.ts'

let seq = 0

export function email(extra: Record<string, unknown> = {}) {
  return { to: 'rcpt@example.com', subject: `Limits ${++seq}`, text_body: 'Hello', ...extra }
}

export function nextUtcHour(at: number): Date {
  const now = new Date(at)
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate(), now.getUTCHours() + 1))
}

/** Retry-After is whole seconds until `resetsAt`, at least 1, as seen between `before` and `after`. */
export function expectRetryAfterUntil(header: string | null, resetsAt: Date, before: number, after: number) {
  expect(header).toMatch(/^\d+$/)
  const seconds = Number(header)
  expect(seconds).toBeGreaterThanOrEqual(Math.max(1, Math.floor((resetsAt.getTime() - after) / 1000)))
  expect(seconds).toBeLessThanOrEqual(Math.ceil((resetsAt.getTime() - before) / 1000))
}

export function rateLimitedBody(): Body {
  return { code: 'RATE_LIMITED', message: expect.any(String), details: { retryAfter: expect.any(Number) } }
}

/** The requests and the limit state of a test file's app. */
export function limitRequests(app: TestApp) {
  function sender(options: SenderOptions = {}): Promise<Sender> {
    return startSender(app, 'limits', options)
  }

  function send(key: string, body: unknown = email()): Promise<Reply> {
    return postSend(app, key, body)
  }

  async function expectSent(s: Sender, body: unknown = email()): Promise<Reply> {
    const reply = await send(s.key, body)
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual(fresh(s.from))
    return reply
  }

  /** `windowsAgo` 0 is the current fixed UTC window, 1 the one before it. */
  async function setQuotaUsed(
    connectionId: number,
    per: 'day' | 'hour',
    used: number,
    windowsAgo = 0,
  ): Promise<void> {
    await app.services.sql`
      insert into quota_usage (connection_id, window_start, used)
      values (${connectionId}, date_trunc(${per}, now(), 'UTC') - ${`${windowsAgo} ${per}`}::interval, ${used})
      on conflict (connection_id, window_start) do update set used = excluded.used`
  }

  /** The pacing bucket as if it last refilled `secondsAgo` seconds ago holding `tokens`. */
  async function setBucket(connectionId: number, tokens: number, secondsAgo: number): Promise<void> {
    await app.services.sql`
      insert into connection_pacing (connection_id, tokens, refilled_at)
      values (${connectionId}, ${tokens}, now() - make_interval(secs => ${secondsAgo}))
      on conflict (connection_id) do update set tokens = excluded.tokens, refilled_at = excluded.refilled_at`
  }

  /** Keeps pacing out of tests that are not about it (a full bucket holds 10 tokens). */
  async function fillBucket(connectionId: number): Promise<void> {
    await setBucket(connectionId, 10, 0)
  }

  /** Sends and checks the 429 for a refused send; returns the reply and the clock around it. */
  async function refused(key: string, body: unknown = email()) {
    const before = Date.now()
    const reply = await send(key, body)
    const after = Date.now()
    expect(reply.status).toBe(429)
    return { reply, before, after }
  }

  return { sender, send, expectSent, setQuotaUsed, setBucket, fillBucket, refused }
}
