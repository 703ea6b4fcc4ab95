/**
 * A batch run by a worker waits, and never fails, for what holds it: a connection's quota,
 * provider push-back, pacing, a disabled connection; a connection deleted mid-batch fails only
 * the recipients still waiting.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { batchFailures } from '../../src/batches/batches.ts'
import { deleteConnection, disableConnection, resumeConnection } from '../../src/connections/connections.ts'
import { QUEUE_LANES } from '../../src/worker/worker.ts'
import { useTestApp } from '../support/app.ts'
import { RETRY, receivedCounts, template, useBatchWorker } from '../support/batch-processing.ts'
import {
  addresses,
  batchOf,
  createdBatch,
  mailroom,
  poll,
  waitForBatch,
  waitForBatchEnd,
} from '../support/batches.ts'
import { holdsUntil, startAppBeforeTopOfHour, waitForMatch } from '../support/queue.ts'
import { startSender } from '../support/sending.ts'
import type { ReceivedMessage } from '../support/smtp-sink.ts'

const app = useTestApp()
useBatchWorker(app)

describe('limits make a batch wait, never fail it', () => {
  it('connection quota 5 per hour, 8 recipients: 5 sent, 3 wait (running) until the next window, then completed', {
    timeout: 30_000,
  }, async () => {
    // Mailroom's clock reaches a top of the hour 8 s from now (a loaded machine needs the lead).
    const { app: clockApp, boundary } = await startAppBeforeTopOfHour(8_000)
    try {
      const s = await startSender(clockApp, 'quota', { plan: 'pro', quota: { quota: 5, per: 'hour' } })
      await clockApp.worker({ retry: RETRY })
      const id = await createdBatch(clockApp, s.key, { template, recipients: addresses('q', 8) })
      await s.sink.waitForMessages(5, 3_000)
      // The sink has them a moment before their records say so.
      await waitForBatch(clockApp, s.key, id, (b) => b.sent_count === 5, 3_000)
      expect(boundary - Date.now(), 'the first five must arrive well before the window ends').toBeGreaterThan(
        1_000,
      )
      // Until the window ends: five sent, three waiting, nothing failed, the batch running.
      const checked = await holdsUntil(
        boundary - 300,
        async () => ({ arrived: s.sink.messages.length, batch: await batchOf(clockApp, s.key, id) }),
        ({ arrived, batch }) => {
          expect(arrived).toBe(5)
          expect(batch).toMatchObject({ status: 'running', sent_count: 5, failed_count: 0, progress: 62 })
        },
      )
      expect(checked).toBeGreaterThan(3)
      await s.sink.waitForMessages(8, 11_000)
      expect(await waitForBatchEnd(clockApp, s.key, id)).toMatchObject({
        status: 'completed',
        sent_count: 8,
        failed_count: 0,
      })
      const late = s.sink.messages.slice(5)
      expect(late.every((m) => m.receivedAt.getTime() >= boundary - 50)).toBe(true)
    } finally {
      await clockApp.close()
    }
  })

  it('provider push-back (421): the batch waits, nobody fails; once the provider accepts and the connection runs again, completed', {
    timeout: 30_000,
  }, async () => {
    const s = await startSender(app, 'pushback', { plan: 'pro', behaviour: { throttleAfter: 3 } })
    const recipients = addresses('pb', 10)
    const id = await createdBatch(app, s.key, { template, recipients })
    await s.sink.waitForMessages(3)
    // Pushed back at least once.
    await poll('a pushed-back recipient', async () => {
      const [row] = await app.services.sql<{ n: number }[]>`
        select count(*)::int as n from outbox where batch_id = ${id} and deferrals > 0`
      return (row?.n ?? 0) > 0 ? true : undefined
    })
    // Transactions under way when the sink started pushing back may still end accepted.
    await sleep(200)
    const sent = s.sink.messages.length
    expect(sent).toBeLessThan(10)
    const until = Date.now() + 1_500
    while (Date.now() < until) {
      expect(await batchOf(app, s.key, id)).toMatchObject({
        status: 'running',
        sent_count: sent,
        failed_count: 0,
      })
      expect(s.sink.messages).toHaveLength(sent)
      await sleep(100)
    }
    // The provider takes mail again; repeated push-back may have paused the connection ("Pauses"
    // in docs/decisions.md), which an operator ends.
    s.sink.setBehaviour({ throttleAfter: undefined })
    await resumeConnection(app.services.sql, s.connectionId)
    expect(await waitForBatchEnd(app, s.key, id)).toMatchObject({
      status: 'completed',
      sent_count: 10,
      failed_count: 0,
      progress: 100,
    })
    const counts = receivedCounts(s.sink)
    expect(recipients.filter((r) => counts.get(r) !== 1)).toEqual([])
  })

  it('rejectData 451 for a while: the batch waits and completes without failed recipients', {
    timeout: 30_000,
  }, async () => {
    const s = await startSender(app, 'pushdata', {
      plan: 'pro',
      behaviour: { rejectData: { code: 451, message: '4.7.1 Try again later' } },
    })
    const recipients = addresses('pd', 5)
    const id = await createdBatch(app, s.key, { template, recipients })
    await poll('a pushed-back recipient', async () => {
      const [row] = await app.services.sql<{ n: number }[]>`
        select count(*)::int as n from outbox where batch_id = ${id} and deferrals > 0`
      return (row?.n ?? 0) > 0 ? true : undefined
    })
    await sleep(1_000)
    expect(await batchOf(app, s.key, id)).toMatchObject({ status: 'running', sent_count: 0, failed_count: 0 })
    s.sink.setBehaviour({ rejectData: undefined })
    await resumeConnection(app.services.sql, s.connectionId)
    expect(await waitForBatchEnd(app, s.key, id)).toMatchObject({
      status: 'completed',
      sent_count: 5,
      failed_count: 0,
    })
  })
})

describe('pacing and a disabled connection make a batch wait', () => {
  it('pacing (60 per minute: a burst of 10, then 1 per second): recipients wait their turn, none fails', {
    timeout: 30_000,
  }, async () => {
    const s = await startSender(app, 'paced', { plan: 'pro', rate: 60 })
    // No token is taken before the batch exists: a lower bound that no delay can break.
    const createdFrom = Date.now()
    const id = await createdBatch(app, s.key, { template, recipients: addresses('pace', 12) })
    const messages = await s.sink.waitForMessages(12, 10_000)
    expect(await waitForBatchEnd(app, s.key, id)).toMatchObject({
      status: 'completed',
      sent_count: 12,
      failed_count: 0,
    })
    // A bucket of ten, then one token a second: the 12th waits two seconds at least.
    const last = (messages[11] as ReceivedMessage).receivedAt.getTime()
    expect(last - createdFrom, 'the last two waited for tokens').toBeGreaterThanOrEqual(1_990)
  })

  it('disabled mid-batch: the rest is held (not sent, not failed) until the connection is enabled', {
    timeout: 30_000,
  }, async () => {
    const s = await startSender(app, 'disabled', { plan: 'pro', behaviour: { dataDelayMs: 50 } })
    // More recipients than the run has lanes, so that some are still waiting when it is disabled.
    const recipients = QUEUE_LANES + 30
    const id = await createdBatch(app, s.key, { template, recipients: addresses('dis', recipients) })
    await s.sink.waitForMessages(5)
    await disableConnection(app.services.sql, s.connectionId, true)
    // Sends under way when it was disabled may still finish: wait until none is in flight.
    const { batch: held } = await waitForMatch(
      `batch ${id} settled`,
      async () => ({
        batch: await batchOf(app, s.key, id),
        inFlight: (
          await app.services
            .sql`select count(*)::int as n from outbox where batch_id = ${id} and status = 'sending'`
        )[0]?.n,
      }),
      ({ batch, inFlight }) => inFlight === 0 && batch.sent_count === s.sink.messages.length,
      10_000,
    )
    expect(held).toMatchObject({ status: 'running', failed_count: 0 })
    expect(held.sent_count).toBeLessThan(recipients)
    await sleep(1_500)
    expect(await batchOf(app, s.key, id)).toMatchObject({
      status: 'running',
      sent_count: held.sent_count,
      failed_count: 0,
    })
    await disableConnection(app.services.sql, s.connectionId, false)
    expect(await waitForBatchEnd(app, s.key, id)).toMatchObject({
      status: 'completed',
      sent_count: recipients,
      failed_count: 0,
    })
  })
})

describe('a connection deleted mid-batch', () => {
  it('fails the waiting recipients with `connection deleted`; the batch ends completed with those sent', {
    timeout: 30_000,
  }, async () => {
    const s = await startSender(app, 'delconn', { plan: 'pro', behaviour: { dataDelayMs: 50 } })
    const recipients = addresses('dc', 60)
    const id = await createdBatch(app, s.key, { template, recipients })
    await s.sink.waitForMessages(5)
    await deleteConnection(app.services.sql, s.connectionId)

    const ended = await waitForBatchEnd(app, s.key, id)
    expect(ended.status).toBe('completed')
    expect(ended.failed_count).toBeGreaterThan(0)
    expect(ended.sent_count + ended.failed_count).toBe(60)
    expect(ended.progress).toBe(100)
    // What was sent is what arrived, once each.
    await sleep(300)
    const counts = receivedCounts(s.sink)
    expect(counts.size).toBe(ended.sent_count)
    expect([...counts.values()].every((n) => n === 1)).toBe(true)

    // What `mailroom batch failures` prints (the command itself is run in the tests above).
    const failures = await batchFailures(app.services.sql, id)
    expect(failures).toHaveLength(ended.failed_count)
    expect(failures.every((f) => f.error === 'connection deleted')).toBe(true)
    expect(failures.every((f) => !counts.has(f.email))).toBe(true)
    // Nothing to send them through any more: the retry is refused and changes nothing.
    const retry = await mailroom(app.db.url, ['batch', 'retry', String(id)])
    expect(retry.code).not.toBe(0)
    expect(retry.stderr).toMatch(/\S/)
    expect(await batchOf(app, s.key, id)).toMatchObject({
      status: 'completed',
      failed_count: ended.failed_count,
    })
  })
})
