/**
 * Contract tests for the limits of POST /send: the Free plan's daily limit, the connection quota,
 * pacing, and the order in which they are checked (daily limit → quota → pacing → SMTP).
 * Every counter is checked through what the API answers, what the SMTP sink received, and the
 * counters the service keeps in PostgreSQL.
 */
import { describe, expect, it } from 'vitest'
import { bucketCapacity } from '../../src/quota/pacing.ts'
import { useTestApp } from '../support/app.ts'
import {
  type Body,
  dailyLimitBody,
  dailyUsed,
  expectRetryAfter,
  fresh,
  nextUtcMidnight,
  postSend,
  quotaBody,
  quotaUsed,
  type Reply,
  type Sender,
  type SenderOptions,
  setDailyUsed,
  startSender,
} from '../support/sending.ts'

const ISO_MILLIS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

const app = useTestApp()

let seq = 0

function sender(options: SenderOptions = {}): Promise<Sender> {
  return startSender(app, 'limits', options)
}

function email(extra: Record<string, unknown> = {}) {
  return { to: 'rcpt@example.com', subject: `Limits ${++seq}`, text_body: 'Hello', ...extra }
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

// --- State set with SQL, and counters read back -------------------------------------------------

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

// --- Clock helpers: expected values of resetsAt and Retry-After ---------------------------------

function nextUtcHour(at: number): Date {
  const now = new Date(at)
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate(), now.getUTCHours() + 1))
}

/** Retry-After is whole seconds until `resetsAt`, at least 1, as seen between `before` and `after`. */
function expectRetryAfterUntil(header: string | null, resetsAt: Date, before: number, after: number) {
  expect(header).toMatch(/^\d+$/)
  const seconds = Number(header)
  expect(seconds).toBeGreaterThanOrEqual(Math.max(1, Math.floor((resetsAt.getTime() - after) / 1000)))
  expect(seconds).toBeLessThanOrEqual(Math.ceil((resetsAt.getTime() - before) / 1000))
}

/** Sends and checks the 429 for a refused send; returns the reply and the clock around it. */
async function refused(key: string, body: unknown = email()) {
  const before = Date.now()
  const reply = await send(key, body)
  const after = Date.now()
  expect(reply.status).toBe(429)
  return { reply, before, after }
}

function rateLimitedBody(): Body {
  return { code: 'RATE_LIMITED', message: expect.any(String), details: { retryAfter: expect.any(Number) } }
}

// ------------------------------------------------------------------------------------------------

describe('Free plan daily limit (100 emails a day, resets 00:00 UTC)', () => {
  it('sends the 100th email of the day and refuses the 101st with DAILY_LIMIT_REACHED and Retry-After', async () => {
    const s = await sender()
    await setDailyUsed(app, s.accountId, 99)

    await expectSent(s)
    expect(await dailyUsed(app, s.accountId)).toBe(100)

    const { reply, before, after } = await refused(s.key)
    expect(reply.body).toEqual(dailyLimitBody())
    expect((reply.body as { message: string }).message).toContain(
      `\`mailroom account set-plan ${s.accountId} pro\` lifts this`,
    )
    expectRetryAfterUntil(reply.retryAfter, nextUtcMidnight(before), before, after)
    expect(Number(reply.retryAfter)).toBeLessThanOrEqual(86_400)

    expect(s.sink.messages).toHaveLength(1)
    expect(await dailyUsed(app, s.accountId)).toBe(100)
  })

  it('counts 100 real sends and refuses the 101st', async () => {
    const s = await sender()
    for (let i = 1; i <= 100; i++) {
      await fillBucket(s.connectionId)
      const reply = await send(s.key, email({ subject: `Daily ${i}` }))
      expect(reply.status, `send #${i}: ${JSON.stringify(reply.body)}`).toBe(200)
    }
    expect(await dailyUsed(app, s.accountId)).toBe(100)
    expect(s.sink.messages).toHaveLength(100)

    await fillBucket(s.connectionId)
    const { reply } = await refused(s.key)
    expect(reply.body).toEqual(dailyLimitBody())
    expect(s.sink.messages).toHaveLength(100)
  })

  it('only counts today: usage of an earlier UTC day does not count', async () => {
    const s = await sender()
    await app.services.sql`
      insert into daily_usage (account_id, day, used)
      values (${s.accountId}, (now() at time zone 'UTC')::date - 1, 100)`
    await expectSent(s)
    expect(await dailyUsed(app, s.accountId)).toBe(1)
  })

  it('does not cap the Pro plan', async () => {
    const s = await sender({ plan: 'pro' })
    await setDailyUsed(app, s.accountId, 5000)
    await expectSent(s)
    expect(s.sink.messages).toHaveLength(1)
  })

  it('counts one message with several recipients once', async () => {
    const s = await sender()
    await setDailyUsed(app, s.accountId, 98)
    const many = email({
      to: ['a@example.com', 'b@example.com', 'c@example.com', 'd@example.com'],
      cc: 'e@example.com, f@example.com, g@example.com',
      bcc: ['h@example.com', 'i@example.com', 'j@example.com'],
    })
    await expectSent(s, many)
    expect(await dailyUsed(app, s.accountId)).toBe(99)
    expect(s.sink.messages[0]?.envelope.to).toHaveLength(10)

    // The last unit of the day also carries a ten-recipient message.
    await expectSent(s, many)
    expect(await dailyUsed(app, s.accountId)).toBe(100)

    const { reply } = await refused(s.key, many)
    expect(reply.body).toEqual(dailyLimitBody())
    expect(s.sink.messages).toHaveLength(2)
  })
})

describe('connection quota', () => {
  it('sends 3 of a quota of 3 per day and refuses the 4th with QUOTA_EXCEEDED until 00:00 UTC', async () => {
    const s = await sender({ quota: { quota: 3, per: 'day' } })
    for (let i = 0; i < 3; i++) await expectSent(s)
    expect(await quotaUsed(app, s.connectionId)).toBe(3)

    const { reply, before, after } = await refused(s.key)
    const resetsAt = nextUtcMidnight(before)
    expect(reply.body).toEqual(quotaBody(3, 3, resetsAt))
    expect(reply.body.details?.resetsAt).toMatch(ISO_MILLIS)
    expectRetryAfterUntil(reply.retryAfter, resetsAt, before, after)

    expect(s.sink.messages).toHaveLength(3)
    expect(await quotaUsed(app, s.connectionId)).toBe(3)
  })

  it('words a quota of one, and a rate of one, for one email', async () => {
    const quota = await sender({ quota: { quota: 1, per: 'day' } })
    await expectSent(quota)
    expect((await refused(quota.key)).reply.body.message).toBe(
      `The connection for ${quota.from} has used its quota of 1 email per day`,
    )
    const paced = await sender({ rate: 1 })
    await expectSent(paced)
    expect((await refused(paced.key)).reply.body.message).toMatch(
      new RegExp(`^The connection for ${paced.from} sends at most 1 email a minute; retry in \\d+ s$`),
    )
  })

  it('resets an hourly quota at the top of the next hour', async () => {
    const s = await sender({ quota: { quota: 2, per: 'hour' } })
    await expectSent(s)
    await expectSent(s)
    expect(await quotaUsed(app, s.connectionId, 'hour')).toBe(2)

    const { reply, before, after } = await refused(s.key)
    const resetsAt = nextUtcHour(before)
    expect(reply.body).toEqual(quotaBody(2, 2, resetsAt))
    expect(reply.body.details?.resetsAt).toMatch(ISO_MILLIS)
    expectRetryAfterUntil(reply.retryAfter, resetsAt, before, after)
    expect(Number(reply.retryAfter)).toBeLessThanOrEqual(3600)
    expect(s.sink.messages).toHaveLength(2)
  })

  it('counts per fixed window: a used-up previous day does not count, the current day does', async () => {
    const s = await sender({ quota: { quota: 3, per: 'day' } })
    await setQuotaUsed(s.connectionId, 'day', 3, 1)
    await expectSent(s)
    expect(await quotaUsed(app, s.connectionId)).toBe(1)

    await setQuotaUsed(s.connectionId, 'day', 3, 0)
    const { reply, before } = await refused(s.key)
    expect(reply.body).toEqual(quotaBody(3, 3, nextUtcMidnight(before)))
    expect(s.sink.messages).toHaveLength(1)
  })

  it('counts per fixed window: a used-up previous hour does not count, the current hour does', async () => {
    const s = await sender({ quota: { quota: 2, per: 'hour' } })
    await setQuotaUsed(s.connectionId, 'hour', 2, 1)
    await expectSent(s)
    expect(await quotaUsed(app, s.connectionId, 'hour')).toBe(1)

    await setQuotaUsed(s.connectionId, 'hour', 2, 0)
    const { reply, before } = await refused(s.key)
    expect(reply.body).toEqual(quotaBody(2, 2, nextUtcHour(before)))
    expect(s.sink.messages).toHaveLength(1)
  })

  it('refuses once the owner lowers the quota below what the window already used', async () => {
    const s = await sender({ quota: { quota: 5, per: 'day' } })
    for (let i = 0; i < 3; i++) await expectSent(s)
    await app.services.sql`update connections set quota = 2 where id = ${s.connectionId}`

    const { reply, before } = await refused(s.key)
    expect(reply.body).toEqual(quotaBody(2, 3, nextUtcMidnight(before)))
    expect(s.sink.messages).toHaveLength(3)
    expect(await quotaUsed(app, s.connectionId)).toBe(3)

    // Raised back above what was used, the quota lets mail through again.
    await app.services.sql`update connections set quota = 4 where id = ${s.connectionId}`
    await expectSent(s)
    expect(await quotaUsed(app, s.connectionId)).toBe(4)
  })

  it('applies to the Pro plan too', async () => {
    const s = await sender({ plan: 'pro', quota: { quota: 1, per: 'day' } })
    await expectSent(s)
    const { reply, before } = await refused(s.key)
    expect(reply.body).toEqual(quotaBody(1, 1, nextUtcMidnight(before)))
    expect(s.sink.messages).toHaveLength(1)
  })
})

describe('order of checks: daily limit → quota → pacing', () => {
  it('answers DAILY_LIMIT_REACHED when the Free daily limit and the quota are both used up', async () => {
    const s = await sender({ quota: { quota: 1, per: 'day' } })
    await setDailyUsed(app, s.accountId, 100)
    await setQuotaUsed(s.connectionId, 'day', 1)

    const { reply } = await refused(s.key)
    expect(reply.body).toEqual(dailyLimitBody())
    expect(await quotaUsed(app, s.connectionId)).toBe(1)
    expect(s.sink.messages).toHaveLength(0)
  })

  it('answers QUOTA_EXCEEDED with one unit of the daily limit left, and takes no daily unit', async () => {
    const s = await sender({ quota: { quota: 1, per: 'day' } })
    await setDailyUsed(app, s.accountId, 99)
    await setQuotaUsed(s.connectionId, 'day', 1)

    const { reply, before } = await refused(s.key)
    expect(reply.body).toEqual(quotaBody(1, 1, nextUtcMidnight(before)))
    expect(await dailyUsed(app, s.accountId)).toBe(99)
    expect(s.sink.messages).toHaveLength(0)
  })

  it('answers QUOTA_EXCEEDED when the quota is used up and the pacing bucket is empty', async () => {
    const s = await sender({ quota: { quota: 1, per: 'day' }, rate: 1 })
    await setQuotaUsed(s.connectionId, 'day', 1)
    await setBucket(s.connectionId, 0, 0)

    const { reply, before } = await refused(s.key)
    expect(reply.body).toEqual(quotaBody(1, 1, nextUtcMidnight(before)))
    expect(s.sink.messages).toHaveLength(0)
  })

  it('answers RATE_LIMITED when the quota has room and the pacing bucket is empty, taking no unit', async () => {
    const s = await sender({ quota: { quota: 5, per: 'day' }, rate: 1 })
    await setDailyUsed(app, s.accountId, 10)
    await setQuotaUsed(s.connectionId, 'day', 2)
    await setBucket(s.connectionId, 0, 0)

    const { reply } = await refused(s.key)
    expect(reply.body).toEqual(rateLimitedBody())
    expectRetryAfter(reply, 60)
    expect(await dailyUsed(app, s.accountId)).toBe(10)
    expect(await quotaUsed(app, s.connectionId)).toBe(2)
    expect(s.sink.messages).toHaveLength(0)
  })

  it('takes no pacing token for a send the quota refused', async () => {
    // rate 1: one token, the next one a minute later; a token taken by the refusal would show.
    const s = await sender({ quota: { quota: 1, per: 'day' }, rate: 1 })
    await setQuotaUsed(s.connectionId, 'day', 1)
    const { reply } = await refused(s.key)
    expect(reply.body.code).toBe('QUOTA_EXCEEDED')

    await app.services.sql`update connections set quota = 2 where id = ${s.connectionId}`
    await expectSent(s)
    expect(s.sink.messages).toHaveLength(1)
  })

  it('takes no quota unit for a send the daily limit refused', async () => {
    const s = await sender({ quota: { quota: 5, per: 'day' } })
    await setDailyUsed(app, s.accountId, 100)
    await setQuotaUsed(s.connectionId, 'day', 2)
    const { reply } = await refused(s.key)
    expect(reply.body).toEqual(dailyLimitBody())
    expect(await quotaUsed(app, s.connectionId)).toBe(2)
    expect(await dailyUsed(app, s.accountId)).toBe(100)
  })
})

describe('a send a limit refused leaves no trace', () => {
  // The attempt is recorded (claiming its key) before the limits are asked: a refusal undoes it.
  async function outboxCount(accountId: number): Promise<number> {
    const [row] = await app.services.sql<{ n: number }[]>`
      select count(*)::int as n from outbox where account_id = ${accountId}`
    return row?.n ?? -1
  }

  it('no outbox record after DAILY_LIMIT_REACHED, QUOTA_EXCEEDED or RATE_LIMITED; a sent one has one', async () => {
    const s = await sender({ quota: { quota: 5, per: 'day' }, rate: 1 })
    await setDailyUsed(app, s.accountId, 100)
    expect((await refused(s.key)).reply.body.code).toBe('DAILY_LIMIT_REACHED')
    await setDailyUsed(app, s.accountId, 0)
    await setQuotaUsed(s.connectionId, 'day', 5)
    expect((await refused(s.key)).reply.body.code).toBe('QUOTA_EXCEEDED')
    await setQuotaUsed(s.connectionId, 'day', 0)
    await setBucket(s.connectionId, 0, 0)
    expect((await refused(s.key)).reply.body.code).toBe('RATE_LIMITED')
    expect(await outboxCount(s.accountId)).toBe(0)
    expect(await dailyUsed(app, s.accountId)).toBe(0)
    expect(await quotaUsed(app, s.connectionId)).toBe(0)

    await setBucket(s.connectionId, 1, 0)
    await expectSent(s)
    expect(await outboxCount(s.accountId)).toBe(1)
    expect(await dailyUsed(app, s.accountId)).toBe(1)
    expect(await quotaUsed(app, s.connectionId)).toBe(1)
  })
})

describe('pacing (token bucket, capacity min(rate, max(10, ceil(rate / 60))))', () => {
  /** The bucket's tokens after one send that found it idle for an hour: its capacity, less one. */
  async function tokensLeftAfterIdle(rate: number): Promise<number> {
    const s = await sender({ rate })
    await setBucket(s.connectionId, 0, 3600)
    await expectSent(s)
    const [bucket] = await app.services.sql<{ tokens: number }[]>`
      select tokens from connection_pacing where connection_id = ${s.connectionId}`
    return bucket?.tokens as number
  }

  it.each([
    [6, 6],
    [600, 10],
    [601, 11],
    [6000, 100],
    [60000, 1000],
  ])(
    'rate %i/min fills the bucket to %i tokens, one second of sending (at least min(rate, 10))',
    async (rate, capacity) => {
      expect(bucketCapacity(rate)).toBe(capacity)
      expect(await tokensLeftAfterIdle(rate)).toBe(capacity - 1)
    },
  )

  it('rate 1/min holds one token: the first send goes, the second is RATE_LIMITED', async () => {
    const s = await sender({ rate: 1 })
    await expectSent(s)

    const { reply } = await refused(s.key)
    expect(reply.body).toEqual(rateLimitedBody())
    // One token a minute: the next is due within 60 s.
    expectRetryAfter(reply, 60)
    expect(s.sink.messages).toHaveLength(1)
  })

  it('rate 3/min holds three tokens', async () => {
    const s = await sender({ rate: 3 })
    for (let i = 0; i < 3; i++) await expectSent(s)

    const { reply } = await refused(s.key)
    expect(reply.body).toEqual(rateLimitedBody())
    expectRetryAfter(reply, 20)
    expect(s.sink.messages).toHaveLength(3)
  })

  it('caps the bucket at 10 tokens for a rate of 12/min, however long it was idle', async () => {
    // rate 12/min: a token every 5 s, so the ten sends finish well before an eleventh is due.
    const s = await sender({ rate: 12 })
    await setBucket(s.connectionId, 0, 3600)
    for (let i = 1; i <= 10; i++) {
      const reply = await send(s.key)
      expect(reply.status, `send #${i}: ${JSON.stringify(reply.body)}`).toBe(200)
    }

    const { reply } = await refused(s.key)
    expect(reply.body).toEqual(rateLimitedBody())
    expectRetryAfter(reply, 5)
    expect(s.sink.messages).toHaveLength(10)
  })

  it('an empty bucket at 60/min asks to retry in 1 s; two seconds of refill let the send through', async () => {
    const s = await sender({ rate: 60 })
    await setBucket(s.connectionId, 0, 0)
    const { reply } = await refused(s.key)
    expect(reply.body).toEqual({
      code: 'RATE_LIMITED',
      message: expect.any(String),
      details: { retryAfter: 1 },
    })
    expect(reply.retryAfter).toBe('1')
    expect(s.sink.messages).toHaveLength(0)

    await setBucket(s.connectionId, 0, 2)
    await expectSent(s)
    expect(s.sink.messages).toHaveLength(1)
  })
})

describe('a send the SMTP server rejects uses no quota', () => {
  it('answers 500 on a rejected DATA and gives back the quota and daily units', async () => {
    const s = await sender({
      quota: { quota: 1, per: 'day' },
      behaviour: { rejectData: { code: 554, message: '5.7.1 Message rejected as spam' } },
    })
    await setDailyUsed(app, s.accountId, 10)

    const reply = await send(s.key)
    expect(reply.status).toBe(500)
    expect(reply.body).toEqual({
      code: 'INTERNAL_ERROR',
      message: expect.stringContaining('Message rejected as spam'),
    })
    expect(s.sink.messages).toHaveLength(0)
    expect(await quotaUsed(app, s.connectionId)).toBe(0)
    expect(await dailyUsed(app, s.accountId)).toBe(10)

    // The one unit of quota is still there for a good send.
    s.sink.setBehaviour({ rejectData: undefined })
    await expectSent(s)
    expect(s.sink.messages).toHaveLength(1)
    expect(await quotaUsed(app, s.connectionId)).toBe(1)
    expect(await dailyUsed(app, s.accountId)).toBe(11)

    const { reply: after, before } = await refused(s.key)
    expect(after.body).toEqual(quotaBody(1, 1, nextUtcMidnight(before)))
  })

  it('answers 500 when the SMTP server is unreachable and gives back the units', async () => {
    const s = await sender({ quota: { quota: 1, per: 'day' } })
    await setDailyUsed(app, s.accountId, 99)
    await s.sink.close()

    const reply = await send(s.key)
    expect(reply.status).toBe(500)
    expect(reply.body).toEqual({ code: 'INTERNAL_ERROR', message: expect.any(String) })
    expect(await quotaUsed(app, s.connectionId)).toBe(0)
    expect(await dailyUsed(app, s.accountId)).toBe(99)
  })

  it('gives back the last unit of the Free daily limit when the recipient is refused', async () => {
    const s = await sender({ behaviour: { rejectRecipients: ['nobody@example.com'] } })
    await setDailyUsed(app, s.accountId, 99)

    const reply = await send(s.key, email({ to: 'nobody@example.com' }))
    expect(reply.status).toBe(500)
    expect(reply.body).toEqual({ code: 'INTERNAL_ERROR', message: expect.stringContaining('5.1.1') })
    expect(await dailyUsed(app, s.accountId)).toBe(99)

    await expectSent(s)
    expect(await dailyUsed(app, s.accountId)).toBe(100)
    expect(s.sink.messages).toHaveLength(1)
  })
})
