/**
 * POST /send's pacing, a token bucket per connection, and the order in which the limits are
 * checked (daily limit → quota → pacing → SMTP), each refusal taking no unit of the others.
 */
import { describe, expect, it } from 'vitest'
import { bucketCapacity } from '../../src/quota/pacing.ts'
import { useTestApp } from '../support/app.ts'
import { limitRequests, rateLimitedBody } from '../support/limits.ts'
import {
  dailyLimitBody,
  dailyUsed,
  expectRetryAfter,
  nextUtcMidnight,
  quotaBody,
  quotaUsed,
  setDailyUsed,
} from '../support/sending.ts'

const app = useTestApp()
const { sender, send, expectSent, setQuotaUsed, setBucket, refused } = limitRequests(app)

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
