/**
 * POST /send through a Free account's one connection to a sink that accepts, refuses or pushes
 * back as a test sets it, and what the connection, the outbox and the counters keep of it.
 */
import { afterEach, beforeAll, expect } from 'vitest'
import { listConnections, type QuotaInput } from '../../src/connections/connections.ts'
import { sealPassword } from '../../src/smtp/secret-box.ts'
import { type SeededAccount, seedAccount, TEST_SECRET, type TestApp } from './app.ts'
import { humanText } from './matchers.ts'
import { expectRetryAfter, postSend, type Reply } from './sending.ts'
import type { SinkBehaviour, SmtpSink, SmtpSinkOptions } from './smtp-sink.ts'

export const REFUSED = 'nobody@example.com'
export const SPAM = { code: 554, message: '5.7.1 Message rejected as spam' }

interface Sinks {
  /** Accepts everything except mail to REFUSED (550 5.1.1 at RCPT). */
  good: SmtpSink
  /** Its DATA reply is set per test (and reset after each); also refuses REFUSED at RCPT. */
  flaky: SmtpSink
}

let seq = 0

/** The sinks of a test file's app, and the sends and checks made through them. */
export function useSmtpOutcomes(app: TestApp) {
  const sinks = {} as Sinks

  beforeAll(async () => {
    ;[sinks.good, sinks.flaky] = await Promise.all([
      app.sink({ port: 587, behaviour: { rejectRecipients: [REFUSED] } }),
      app.sink({ port: 465, behaviour: { rejectRecipients: [REFUSED] } }),
    ])
  })

  afterEach(() => {
    sinks.flaky?.setBehaviour({ rejectData: undefined })
  })

  const sending = sinkChecks(app, sinks)
  return { sinks, ...sending, ...answerChecks(sending.send), ...connectionChecks(app), ...recordChecks(app) }
}

/** Accounts whose connection goes to a sink of `sinks`, sends through them, the sink's replies. */
function sinkChecks(app: TestApp, sinks: Sinks) {
  /**
   * A new server where the connection's closed `old` one was (same address and port). Other test
   * runs on this machine may take the freed address meanwhile; then the new server listens
   * elsewhere and the connection's host is moved to it, which is the same situation for Mailroom.
   */
  async function replaceSink(
    old: SmtpSink,
    seeded: SeededAccount,
    options: Omit<SmtpSinkOptions, 'port' | 'host'>,
  ) {
    try {
      return await app.sink({ ...options, port: old.port, host: old.host })
    } catch (error) {
      if (!/EADDRINUSE/.test(String(error))) throw error
      const moved = await app.sink({ ...options, port: old.port })
      await app.services
        .sql`update connections set host = ${moved.host} where id = ${seeded.connection?.id as number}`
      return moved
    }
  }

  /** A Free account whose only (default) connection goes to `sink`, and its unscoped key. */
  function account(sink: SmtpSink, quota?: QuotaInput): Promise<SeededAccount> {
    const n = ++seq
    return seedAccount(app, {
      plan: 'free',
      connection: {
        ...sink.login,
        from: `sender${n}@smtp-${n}.example`,
        rate: 6000,
        ...(quota ? { quota } : {}),
      },
    })
  }

  function send(seeded: SeededAccount, to = 'ada@example.com'): Promise<Reply> {
    return postSend(app, seeded.key, { to, subject: `SMTP outcome ${++seq}`, text_body: 'Hello' })
  }

  function setReply(reply: SinkBehaviour['rejectData']) {
    sinks.flaky.setBehaviour({ rejectData: reply })
  }

  return { replaceSink, account, send, setReply }
}

/** What the answer to a send through a sink must be. */
function answerChecks(send: (seeded: SeededAccount, to?: string) => Promise<Reply>) {
  async function expectSent(seeded: SeededAccount, sink: SmtpSink) {
    const before = sink.messages.length
    const { status, body } = await send(seeded)
    expect(status, JSON.stringify(body)).toBe(200)
    expect(body.success).toBe(true)
    expect(sink.messages.length).toBe(before + 1)
  }

  async function expectInternalError(seeded: SeededAccount, to = 'ada@example.com') {
    const { status, body } = await send(seeded, to)
    expect(status, JSON.stringify(body)).toBe(500)
    expect(body).toEqual({ code: 'INTERNAL_ERROR', message: humanText })
    return body.message as string
  }

  async function expectPushback(seeded: SeededAccount) {
    const reply = await send(seeded)
    expect(reply.status, JSON.stringify(reply.body)).toBe(429)
    expect(reply.body).toEqual({
      code: 'RATE_LIMITED',
      message: humanText,
      details: { retryAfter: expect.any(Number) },
    })
    expectRetryAfter(reply)
  }

  /** 403 CONNECTION_PAUSED, and the sink (accepting again) gets nothing. */
  async function expectPaused(seeded: SeededAccount, sink: SmtpSink) {
    const before = sink.messages.length
    const { status, body } = await send(seeded)
    expect(status, JSON.stringify(body)).toBe(403)
    expect(body).toEqual({ code: 'CONNECTION_PAUSED', message: humanText })
    expect(sink.messages.length).toBe(before)
  }

  return { expectSent, expectInternalError, expectPushback, expectPaused }
}

/** The state of a seeded account's connection, set and read with SQL, and its counters. */
function connectionChecks(app: TestApp) {
  async function statusOf(seeded: SeededAccount) {
    const [view] = await listConnections(app.services.sql, seeded.account.id)
    return view?.status
  }

  /** Seconds until the connection's pause ends (negative or null when not paused). */
  async function pauseSecondsLeft(seeded: SeededAccount): Promise<number | null> {
    const [row] = await app.services.sql<{ left: number | null }[]>`
      select extract(epoch from paused_until - now())::float8 as left from connections
      where id = ${seeded.connection?.id as number}`
    return row?.left ?? null
  }

  /** The pause ends within `minutes` minutes but more than `minutes - 1` from now; returns its seconds. */
  async function expectPauseLeft(seeded: SeededAccount, minutes: number): Promise<number> {
    const left = (await pauseSecondsLeft(seeded)) as number
    expect(left).toBeGreaterThan((minutes - 1) * 60)
    expect(left).toBeLessThanOrEqual(minutes * 60)
    return left
  }

  /** Moves the end of the connection's pause into the past. */
  async function endPause(seeded: SeededAccount) {
    await app.services.sql`
      update connections set paused_until = now() - interval '1 second' where id = ${seeded.connection?.id as number}`
  }

  /** Stores `password` as the connection's, as if the owner had saved it (no login is tried). */
  async function storePassword(seeded: SeededAccount, password: string) {
    await app.services.sql`
      update connections set password_encrypted = ${sealPassword(TEST_SECRET, password)}
      where id = ${seeded.connection?.id as number}`
  }

  /**
   * A minute passes for the connection's failure count: the window its last counted failure
   * opened (/send's Retry-After of 60 s) ends; failures within it count once.
   */
  async function aMinuteLater(seeded: SeededAccount) {
    await app.services.sql`
      update connections set failure_window_until = failure_window_until - interval '61 seconds'
      where id = ${seeded.connection?.id as number}`
  }

  /** Four failures a minute apart (`fail`) leave the connection active; the fifth pauses it. */
  async function expectFifthFailurePauses(seeded: SeededAccount, fail: () => Promise<unknown>) {
    for (let i = 0; i < 4; i++) {
      await fail()
      await aMinuteLater(seeded)
    }
    expect(await statusOf(seeded)).toBe('active')
    await fail()
    expect(await statusOf(seeded)).toBe('paused')
  }

  return { statusOf, expectPauseLeft, endPause, storePassword, aMinuteLater, expectFifthFailurePauses }
}

/** The last outbox record of a seeded account, and the units its sends took. */
function recordChecks(app: TestApp) {
  async function lastOutbox(seeded: SeededAccount) {
    const [row] = await app.services.sql<{ status: string; error: string | null; sent_at: Date | null }[]>`
      select status, error, sent_at from outbox where account_id = ${seeded.account.id} order by id desc limit 1`
    return row
  }

  async function usage(seeded: SeededAccount) {
    const [row] = await app.services.sql<{ quota: number; daily: number }[]>`
      select
        (select coalesce(sum(used), 0)::int from quota_usage where connection_id = ${seeded.connection?.id as number}) as quota,
        (select coalesce(sum(used), 0)::int from daily_usage where account_id = ${seeded.account.id}) as daily`
    return row
  }

  return { lastOutbox, usage }
}
