/**
 * Contract tests for the one budget per connection (docs/decisions.md, "Quota, daily limit and pacing"): /send and
 * the queue take from the same PostgreSQL counters, and two worker processes on one database
 * together never exceed a quota.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, describe, expect, it } from 'vitest'
import type { Services } from '../../src/services.ts'
import type { RunningWorker } from '../../src/worker/worker.ts'
import { openTestServices, useTestApp } from '../support/app.ts'
import {
  email,
  enqueued,
  outboxStatusCounts,
  startTestWorker,
  waitForOutboxStatus,
} from '../support/queue.ts'
import { fresh, nextUtcMidnight, postSend, quotaBody, quotaUsed, startSender } from '../support/sending.ts'

const app = useTestApp()
const workers: RunningWorker[] = []
const otherServices: Services[] = []

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()))
  await Promise.all(otherServices.map((s) => s.close()))
})

describe('/send and the queue share one quota', () => {
  it('quota 3 a day: 2 queued and delivered, then /send gets one through and the next 429 QUOTA_EXCEEDED', async () => {
    const s = await startSender(app, 'shared', { plan: 'pro', quota: { quota: 3, per: 'day' } })
    const worker = await startTestWorker(app.services)
    workers.push(worker)
    const ids = [await enqueued(app, s.key), await enqueued(app, s.key)]
    for (const id of ids) await waitForOutboxStatus(app, s.accountId, id, 'sent')
    expect(await quotaUsed(app, s.connectionId)).toBe(2)

    const third = await postSend(app, s.key, email())
    expect(third.status).toBe(200)
    expect(third.body).toEqual(fresh(s.from))
    const before = Date.now()
    const fourth = await postSend(app, s.key, email())
    expect(fourth.status).toBe(429)
    expect(fourth.body).toEqual(quotaBody(3, 3, nextUtcMidnight(before)))
    expect(s.sink.messages).toHaveLength(3)
  })

  it('quota used up by /send: queued mail waits (queued, no attempt), it does not fail', async () => {
    const s = await startSender(app, 'shared', { plan: 'pro', quota: { quota: 1, per: 'day' } })
    if (workers.length === 0) workers.push(await startTestWorker(app.services))
    expect((await postSend(app, s.key, email())).status).toBe(200)
    const id = await enqueued(app, s.key)

    const until = Date.now() + 1_500
    while (Date.now() < until) {
      const [row] = await app.services.sql<{ status: string; attempts: number }[]>`
        select status, attempts from outbox where id = ${id}`
      expect(row).toEqual({ status: 'queued', attempts: 0 })
      await sleep(100)
    }
    expect(s.sink.messages).toHaveLength(1)
    expect(await quotaUsed(app, s.connectionId)).toBe(1)
  })
})

describe('two worker processes on one database', () => {
  it('40 queued against a quota of 10: exactly 10 delivered, 30 left queued', async () => {
    // Only these two workers run: the file's in-process one is stopped first.
    await Promise.all(workers.splice(0).map((w) => w.stop()))
    const s = await startSender(app, 'twoworkers', {
      plan: 'pro',
      quota: { quota: 10, per: 'day' },
      // Slow enough that the two processes' sends overlap.
      behaviour: { dataDelayMs: 300 },
    })
    const second = await openTestServices(app.db.url)
    otherServices.push(second)
    const claimers = new Set<string>()
    let watching = true
    const watch = (async () => {
      while (watching) {
        const rows = await app.services.sql<{ claimed_by: string }[]>`
          select claimed_by from outbox where account_id = ${s.accountId} and claimed_by is not null`
        for (const row of rows) claimers.add(row.claimed_by)
        await sleep(5)
      }
    })()
    workers.push(
      ...(await Promise.all([
        startTestWorker(app.services, { concurrency: 2, lanes: 2 }),
        startTestWorker(second, { concurrency: 2, lanes: 2 }),
      ])),
    )
    // Both are running before any mail is due, and a process holds at most four sends at once (two
    // runs of two lanes): neither can take the whole quota while the other is still starting.
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => enqueued(app, s.key, email({ to: `two${i}@example.com` }))),
    )
    // The connection's queue is one keyed job; seven more runs of it make both processes drain it
    // at once (two runs each at a time, two lanes per run: eight sends race for the last units).
    await app.services.sql`
      select graphile_worker.add_job('deliver_queue', json_build_object('connectionId', ${s.connectionId}::int))
      from generate_series(1, 7)`

    await s.sink.waitForMessages(10, 10_000)
    // Long enough for either process to send an eleventh, were it to.
    await sleep(1_500)
    watching = false
    await watch

    expect(claimers.size, 'both processes sent some of the mail').toBe(2)
    expect(s.sink.messages).toHaveLength(10)
    expect(await quotaUsed(app, s.connectionId)).toBe(10)
    expect(await outboxStatusCounts(app, s.accountId)).toEqual({ sent: 10, queued: 30 })
    const [burnt] = await app.services.sql<{ n: number }[]>`
      select count(*)::int as n from outbox where account_id = ${s.accountId} and status = 'queued' and attempts > 0`
    expect(burnt?.n).toBe(0)
  })
})
