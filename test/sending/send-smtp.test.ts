import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { listConnections, type QuotaInput } from '../../src/connections/connections.ts'
import { sealPassword } from '../../src/smtp/secret-box.ts'
import { type SeededAccount, seedAccount, TEST_SECRET, useTestApp } from '../support/app.ts'
import { humanText, TIMESTAMP } from '../support/matchers.ts'
import { expectRetryAfter, nextUtcMidnight, postSend, type Reply } from '../support/sending.ts'
import type { SinkBehaviour, SmtpSink, SmtpSinkOptions } from '../support/smtp-sink.ts'

// Contract: POST /send — what the SMTP server's answer becomes (200, 429 RATE_LIMITED on
// push-back, 500 INTERNAL_ERROR with the server's reason), that a failed send uses no quota,
// automatic pausing after repeated provider failures, and no clear-text fallback on 587.

const REFUSED = 'nobody@example.com'
const SPAM = { code: 554, message: '5.7.1 Message rejected as spam' }

const app = useTestApp()
/** Accepts everything except mail to REFUSED (550 5.1.1 at RCPT). */
let good: SmtpSink
/** Its DATA reply is set per test (and reset after each); also refuses REFUSED at RCPT. */
let flaky: SmtpSink

beforeAll(async () => {
  ;[good, flaky] = await Promise.all([
    app.sink({ port: 587, behaviour: { rejectRecipients: [REFUSED] } }),
    app.sink({ port: 465, behaviour: { rejectRecipients: [REFUSED] } }),
  ])
})

afterEach(() => {
  flaky?.setBehaviour({ rejectData: undefined })
})

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

let seq = 0

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
  flaky.setBehaviour({ rejectData: reply })
}

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

describe('SMTP rejections → 500 INTERNAL_ERROR with the server reason', () => {
  it('a recipient refused by the server (550 5.1.1): reason in message, outbox record failed', async () => {
    const seeded = await account(good)
    const before = good.messages.length
    const message = await expectInternalError(seeded, REFUSED)
    expect(message).toContain('5.1.1')
    expect(good.messages.length).toBe(before)
    const row = await lastOutbox(seeded)
    expect(row).toEqual({ status: 'failed', error: expect.stringContaining('5.1.1'), sent_at: null })
  })

  it('DATA rejected with 554 (not a quota reply): reason in message', async () => {
    const seeded = await account(flaky)
    setReply(SPAM)
    const before = flaky.messages.length
    const message = await expectInternalError(seeded)
    expect(message).toContain('5.7.1 Message rejected as spam')
    expect(flaky.messages.length).toBe(before)
    expect(await lastOutbox(seeded)).toEqual({
      status: 'failed',
      error: expect.stringContaining('Message rejected as spam'),
      sent_at: null,
    })
  })

  it('an unreachable server (closed after the connection was saved)', async () => {
    const gone = await app.sink({ port: 2525 })
    const seeded = await account(gone)
    await gone.close()
    await expectInternalError(seeded)
    expect((await lastOutbox(seeded))?.status).toBe('failed')
  })

  it('a password changed on the server after the connection was saved', async () => {
    const first = await app.sink({ port: 2525, password: 'first-password' })
    const seeded = await account(first)
    await expectSent(seeded, first)
    await first.close()
    const changed = await replaceSink(first, seeded, { password: 'changed-password' })
    const message = await expectInternalError(seeded)
    expect(message).toContain('5.7.8')
    expect(message).not.toContain('first-password')
    expect(message).not.toContain(Buffer.from('first-password').toString('base64'))
    expect(changed.authAttempts).toBeGreaterThanOrEqual(1)
    expect(changed.messages).toEqual([])
  })

  it('a wrong stored password (updated in the database): 500, nothing delivered', async () => {
    const seeded = await account(good)
    await expectSent(seeded, good)
    await storePassword(seeded, 'not-the-password')
    const before = good.messages.length
    const message = await expectInternalError(seeded)
    expect(message).toContain('Authentication credentials invalid')
    expect(message).not.toContain('not-the-password')
    expect(good.messages.length).toBe(before)
  })
})

describe('provider push-back → 429 RATE_LIMITED with Retry-After', () => {
  it.each([
    { code: 451, message: '4.7.1 Try again later' },
    { code: 421, message: '4.7.0 Too many messages, slow down' },
    { code: 450, message: '4.2.1 Mailbox temporarily unavailable' },
    { code: 452, message: '4.3.1 Insufficient system storage' },
    { code: 454, message: 'Throttling failure: Daily message quota exceeded' },
    { code: 550, message: '5.4.5 Daily sending quota exceeded' },
    {
      code: 554,
      message:
        '5.2.0 STOREDRV.Submission.Exception:SubmissionQuotaExceededException; Failed to process message due to a permanent exception',
    },
  ])('DATA answered $code $message', async (reply) => {
    const seeded = await account(flaky)
    setReply(reply)
    const before = flaky.messages.length
    await expectPushback(seeded)
    expect(flaky.messages.length).toBe(before)
  })
})

describe('provider push-back before DATA', () => {
  it('a server that starts answering 421 after one message → 429 RATE_LIMITED', async () => {
    const throttling = await app.sink({ port: 2525, behaviour: { throttleAfter: 1 } })
    const seeded = await account(throttling)
    await expectSent(seeded, throttling)
    await expectPushback(seeded)
    expect(throttling.messages.length).toBe(1)
  })
})

describe('a failed send uses no quota', () => {
  it('quota 1 per day: a refused send, then a good send succeeds, then the quota is used', async () => {
    const seeded = await account(good, { quota: 1, per: 'day' })
    await expectInternalError(seeded, REFUSED)
    expect(await usage(seeded)).toEqual({ quota: 0, daily: 0 })

    await expectSent(seeded, good)
    expect(await usage(seeded)).toEqual({ quota: 1, daily: 1 })

    const { status, body, retryAfter } = await send(seeded)
    expect(status).toBe(429)
    expect(body).toEqual({
      code: 'QUOTA_EXCEEDED',
      message: humanText,
      details: { limit: 1, used: 1, resetsAt: nextUtcMidnight(Date.now()).toISOString() },
    })
    expect(retryAfter).toMatch(/^[1-9]\d*$/)
    expect(await usage(seeded)).toEqual({ quota: 1, daily: 1 })
  })

  it('quota 1 per day: a push-back, then a good send succeeds', async () => {
    const seeded = await account(flaky, { quota: 1, per: 'day' })
    setReply({ code: 451, message: '4.7.1 Try again later' })
    await expectPushback(seeded)
    expect(await usage(seeded)).toEqual({ quota: 0, daily: 0 })
    setReply(undefined)
    await expectSent(seeded, flaky)
    expect(await usage(seeded)).toEqual({ quota: 1, daily: 1 })
  })

  it('an unreachable server leaves the quota and the Free daily count unchanged', async () => {
    const gone = await app.sink({ port: 465 })
    const seeded = await account(gone, { quota: 1, per: 'hour' })
    await gone.close()
    await expectInternalError(seeded)
    await expectInternalError(seeded)
    expect(await usage(seeded)).toEqual({ quota: 0, daily: 0 })
  })
})

describe('connection health: automatic pauses', () => {
  const PUSHBACK = { code: 451, message: '4.7.1 Try again later' }

  /** `n` push-backs a minute apart. */
  async function pushbacks(seeded: SeededAccount, n: number) {
    for (let i = 0; i < n; i++) {
      await expectPushback(seeded)
      await aMinuteLater(seeded)
    }
  }

  it('push-backs within the minute /send asks callers to wait count once: ten in a row (one brief outage) do not pause', async () => {
    const seeded = await account(flaky)
    setReply(PUSHBACK)
    for (let i = 0; i < 10; i++) await expectPushback(seeded)
    expect(await statusOf(seeded)).toBe('active')
    // That was one. A minute on they count again: three more make four, still active; a fifth pauses.
    await aMinuteLater(seeded)
    await pushbacks(seeded, 3)
    expect(await statusOf(seeded)).toBe('active')
    await expectPushback(seeded)
    expect(await statusOf(seeded)).toBe('paused')
  })

  it('5 consecutive push-backs pause the connection (4 do not); the next send is 403 CONNECTION_PAUSED', async () => {
    const seeded = await account(flaky)
    setReply(PUSHBACK)
    await pushbacks(seeded, 4)
    expect(await statusOf(seeded)).toBe('active')
    await pushbacks(seeded, 1)

    const [view] = await listConnections(app.services.sql, seeded.account.id)
    expect(view?.status).toBe('paused')
    expect(view?.paused_until).toMatch(TIMESTAMP)
    await expectPauseLeft(seeded, 15)

    setReply(undefined)
    await expectPaused(seeded, flaky)
  })

  it('4 failures, a success, 4 failures: not paused (the success reset the count)', async () => {
    const seeded = await account(flaky)
    setReply(PUSHBACK)
    await pushbacks(seeded, 4)
    setReply(undefined)
    await expectSent(seeded, flaky)
    setReply(PUSHBACK)
    await pushbacks(seeded, 4)
    expect(await statusOf(seeded)).toBe('active')
    setReply(undefined)
    await expectSent(seeded, flaky)
  })

  it('a refused recipient (550 5.1.1) does not count toward pausing', async () => {
    const seeded = await account(flaky)
    setReply(PUSHBACK)
    await pushbacks(seeded, 4)
    // Refused at RCPT, before DATA: if it counted it would be the fifth failure.
    await expectInternalError(seeded, REFUSED)
    expect(await statusOf(seeded)).toBe('active')
    setReply(undefined)
    await expectSent(seeded, flaky)
  })

  it('many refused recipients alone never pause', async () => {
    const seeded = await account(good)
    for (let i = 0; i < 6; i++) await expectInternalError(seeded, REFUSED)
    expect(await statusOf(seeded)).toBe('active')
    await expectSent(seeded, good)
  })

  it('a non-quota DATA rejection (554 5.7.1) does not count toward pausing', async () => {
    const seeded = await account(flaky)
    setReply(SPAM)
    for (let i = 0; i < 5; i++) await expectInternalError(seeded)
    expect(await statusOf(seeded)).toBe('active')
    setReply(undefined)
    await expectSent(seeded, flaky)
  })

  it('5 authentication failures in a row pause the connection', async () => {
    const seeded = await account(good)
    await storePassword(seeded, 'wrong-password')
    await expectFifthFailurePauses(seeded, () => expectInternalError(seeded))
    // Even with the right password back, the paused connection is not used.
    await storePassword(seeded, good.password)
    await expectPaused(seeded, good)
  })

  it('5 unreachable attempts in a row pause the connection', async () => {
    const gone = await app.sink({ port: 587 })
    const seeded = await account(gone)
    await gone.close()
    await expectFifthFailurePauses(seeded, () => expectInternalError(seeded))
    await expectPaused(seeded, gone)
  })

  it('the pause lifts by itself once its time has passed', async () => {
    const seeded = await account(flaky)
    setReply(PUSHBACK)
    await pushbacks(seeded, 5)
    setReply(undefined)
    await expectPaused(seeded, flaky)
    await endPause(seeded)
    expect(await statusOf(seeded)).toBe('active')
    await expectSent(seeded, flaky)
  })

  it('a second automatic pause lasts twice as long as the first (≈30 min after ≈15 min)', async () => {
    const seeded = await account(flaky)
    setReply(PUSHBACK)
    await pushbacks(seeded, 5)
    const first = await expectPauseLeft(seeded, 15)

    await endPause(seeded)
    // The count starts again after a pause: 4 more failures do not pause.
    await expectFifthFailurePauses(seeded, () => expectPushback(seeded))
    const second = await expectPauseLeft(seeded, 30)
    expect(second).toBeGreaterThan(first * 1.9)
  })
})

describe('certificates and STARTTLS', () => {
  it.each([587, 2525] as const)(
    'a %i server that stops offering STARTTLS after the connection was saved gets neither login nor message',
    async (port) => {
      const original = await app.sink({ port, password: 'starttls-password' })
      const seeded = await account(original)
      await original.close()
      const plain = await replaceSink(original, seeded, {
        password: 'starttls-password',
        offerStartTls: false,
      })
      await expectInternalError(seeded)
      expect(plain.connections).toBeGreaterThanOrEqual(1)
      expect(plain.authAttempts).toBe(0)
      expect(plain.messages).toEqual([])
      expect((await lastOutbox(seeded))?.status).toBe('failed')
    },
  )
})
