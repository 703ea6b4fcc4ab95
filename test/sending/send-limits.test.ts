/**
 * The limits of POST /send: the Free plan's daily limit and the connection quota, a refused send
 * that leaves no trace, and a send the SMTP server rejects that gives its units back. Every
 * counter is checked through what the API answers, what the SMTP sink received, and the counters
 * the service keeps in PostgreSQL.
 */
import { describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { email, expectRetryAfterUntil, limitRequests, nextUtcHour } from '../support/limits.ts'
import { ISO_MILLIS } from '../support/queue.ts'
import {
  dailyLimitBody,
  dailyUsed,
  nextUtcMidnight,
  quotaBody,
  quotaUsed,
  setDailyUsed,
} from '../support/sending.ts'

const app = useTestApp()
const { sender, send, expectSent, setQuotaUsed, setBucket, fillBucket, refused } = limitRequests(app)

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
