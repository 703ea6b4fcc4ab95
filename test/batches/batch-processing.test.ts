/**
 * Contract tests for batch processing with a worker against real TLS SMTP sinks (states,
 * DELETE /batches/{id}, quota and pacing, delivery guarantees, and `mailroom batch failures`
 * and `batch retry`).
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { beforeAll, describe, expect, it } from 'vitest'
import { batchFailures } from '../../src/batches/batches.ts'
import { deleteConnection, disableConnection, resumeConnection } from '../../src/connections/connections.ts'
import { retryPolicy } from '../../src/queue/retry-policy.ts'
import { QUEUE_LANES } from '../../src/worker/worker.ts'
import { useTestApp } from '../support/app.ts'
import {
  addresses,
  answerOf,
  BATCH_NOT_FOUND,
  type BatchView,
  batchOf,
  createdBatch,
  deleteBatch,
  getBatch,
  INVALID_STATUS,
  mailroom,
  mailroomJson,
  poll,
  temporaryAudienceOf,
  waitForBatch,
  waitForBatchEnd,
} from '../support/batches.ts'
import { humanText } from '../support/matchers.ts'
import { holdsUntil, startAppBeforeTopOfHour, waitForMatch } from '../support/queue.ts'
import { startSender } from '../support/sending.ts'
import type { ReceivedMessage, SmtpSink } from '../support/smtp-sink.ts'

const app = useTestApp()

const RETRY = retryPolicy(50, 3, 50)

beforeAll(async () => {
  await app.worker({ retry: RETRY })
})

const template = { subject: 'Batch news', text_body: 'Hello from the batch' }

const ORDER = ['pending', 'running', 'completed'] as const

/** The recipients the sink received, with how many times each. */
function receivedCounts(sink: SmtpSink): Map<string, number> {
  const counts = new Map<string, number>()
  for (const message of sink.messages) {
    for (const to of message.envelope.to) counts.set(to, (counts.get(to) ?? 0) + 1)
  }
  return counts
}

interface FailureRow {
  outbox_id: number
  email: string
  error: string
  attempts: number
  updated_at: string
}

describe('a 1000-recipient batch end to end', () => {
  it('every recipient receives it exactly once; counts and progress rise while it runs; completed at 100', {
    timeout: 60_000,
  }, async () => {
    const s = await startSender(app, 'thousand', { plan: 'pro', rate: 6000 })
    const recipients = addresses('t', 1000)
    const id = await createdBatch(app, s.key, { name: 'Thousand', template, recipients })

    // Poll while it runs: the status only moves forward, sent_count and progress never fall.
    const seen: BatchView[] = []
    let deleteWhileRunning: unknown
    const final = await poll(
      () => `batch ${id} to complete (last: ${JSON.stringify(seen.at(-1))})`,
      async () => {
        const batch = await batchOf(app, s.key, id)
        seen.push(batch)
        if (batch.status === 'running' && batch.progress > 0 && deleteWhileRunning === undefined) {
          deleteWhileRunning = await deleteBatch(app, s.key, id)
        }
        return batch.status === 'completed' || batch.status === 'failed' ? batch : undefined
      },
      45_000,
      100,
    )
    expect(final).toMatchObject({
      status: 'completed',
      total_count: 1000,
      sent_count: 1000,
      failed_count: 0,
      progress: 100,
    })
    const running = seen.filter((b) => b.status === 'running' && b.progress > 0 && b.progress < 100)
    expect(running.length, 'a running batch with 0 < progress < 100 was seen').toBeGreaterThan(0)
    for (const b of running) {
      expect(b.progress).toBe(Math.floor((100 * (b.sent_count + b.failed_count)) / 1000))
      expect(b.total_count).toBe(1000)
    }
    for (let i = 1; i < seen.length; i++) {
      const before = seen[i - 1] as BatchView
      const after = seen[i] as BatchView
      expect(ORDER.indexOf(after.status as (typeof ORDER)[number])).toBeGreaterThanOrEqual(
        ORDER.indexOf(before.status as (typeof ORDER)[number]),
      )
      expect(after.sent_count).toBeGreaterThanOrEqual(before.sent_count)
      expect(after.progress).toBeGreaterThanOrEqual(before.progress)
    }
    expect(deleteWhileRunning, 'DELETE of a running batch').toEqual(INVALID_STATUS)

    const counts = receivedCounts(s.sink)
    expect(s.sink.messages).toHaveLength(1000)
    expect(recipients.filter((r) => counts.get(r) !== 1)).toEqual([])
    // One recipient per message: nobody sees the others.
    expect(s.sink.messages.every((m) => m.envelope.to.length === 1)).toBe(true)
    expect(new Set(s.sink.messages.map((m) => m.headers.get('message-id'))).size).toBe(1000)
    // Sent from the connection's address.
    expect(s.sink.messages.every((m) => m.envelope.from === s.from)).toBe(true)
  })
})

describe('refused addresses', () => {
  it('some refused: completed with failed_count = refused; `batch failures` lists exactly them with the 550 reason; `batch retry` sends them', {
    timeout: 30_000,
  }, async () => {
    const refused = ['nobody1@example.com', 'nobody2@example.com', 'nobody3@example.com']
    const s = await startSender(app, 'refused', {
      plan: 'pro',
      behaviour: { rejectRecipients: refused },
    })
    const good = addresses('ok', 7)
    const id = await createdBatch(app, s.key, {
      template,
      recipients: [...good.slice(0, 4), ...refused, ...good.slice(4)],
    })
    const ended = await waitForBatchEnd(app, s.key, id)
    expect(ended).toMatchObject({
      status: 'completed',
      total_count: 10,
      sent_count: 7,
      failed_count: 3,
      progress: 100,
    })
    expect([...receivedCounts(s.sink).keys()].sort()).toEqual([...good].sort())

    const failures = (await mailroomJson(app.db.url, ['batch', 'failures', String(id)])) as FailureRow[]
    expect(failures.map((f) => f.email).sort()).toEqual(refused)
    for (const failure of failures) {
      expect(failure.error).toMatch(/^550 5\.1\.1 /)
      expect(failure.error).toContain(failure.email)
      expect(failure.error).toContain('User unknown')
    }
    // A permanent refusal is not retried by the worker.
    expect(failures.every((f) => f.attempts === 1)).toBe(true)

    // The provider accepts them now; the operator queues them again.
    s.sink.setBehaviour({ rejectRecipients: [] })
    const retried = (await mailroomJson(app.db.url, ['batch', 'retry', String(id)])) as BatchView
    expect(retried).toMatchObject({ id, status: 'running', sent_count: 7, failed_count: 0, total_count: 10 })
    const done = await waitForBatchEnd(app, s.key, id)
    expect(done).toMatchObject({ status: 'completed', sent_count: 10, failed_count: 0, progress: 100 })
    const counts = receivedCounts(s.sink)
    expect([...good, ...refused].filter((r) => counts.get(r) !== 1)).toEqual([])
    expect(await batchFailures(app.services.sql, id)).toEqual([])
  })

  it('all refused: failed; `batch retry` brings it back to running and then completed', {
    timeout: 30_000,
  }, async () => {
    const refused = addresses('gone', 4)
    const s = await startSender(app, 'allrefused', {
      plan: 'pro',
      behaviour: { rejectRecipients: refused },
    })
    const id = await createdBatch(app, s.key, { template, recipients: refused })
    const ended = await waitForBatchEnd(app, s.key, id)
    expect(ended).toMatchObject({
      status: 'failed',
      total_count: 4,
      sent_count: 0,
      failed_count: 4,
      progress: 100,
    })
    expect(s.sink.messages).toHaveLength(0)
    // Refused addresses never pause the connection: they are the address's problem.
    const [connection] = await app.services.sql<{ paused: boolean }[]>`
      select coalesce(paused_until > now(), false) as paused from connections where id = ${s.connectionId}`
    expect(connection?.paused).toBe(false)

    s.sink.setBehaviour({ rejectRecipients: [] })
    const retried = (await mailroomJson(app.db.url, ['batch', 'retry', String(id)])) as BatchView
    expect(retried).toMatchObject({ id, status: 'running', sent_count: 0, failed_count: 0, progress: 0 })
    const done = await waitForBatchEnd(app, s.key, id)
    expect(done).toMatchObject({ status: 'completed', sent_count: 4, failed_count: 0, progress: 100 })
  })

  it('`batch failures` and `batch retry` of an unknown batch fail with a reason on stderr, worded for the operator', async () => {
    const [failures, retry] = await Promise.all([
      mailroom(app.db.url, ['batch', 'failures', '999999']),
      mailroom(app.db.url, ['batch', 'retry', '999999']),
    ])
    for (const run of [failures, retry]) {
      expect(run.code).not.toBe(0)
      expect(run.stdout).toBe('')
      // The command names no account: "on this account" would speak of one.
      expect(run.stderr.trim()).toMatch(/No batch with id 999999$/)
    }
  })
})

describe('DELETE /batches/{id} once it ran', () => {
  it('running: 400 INVALID_STATUS; completed: 200, then BATCH_NOT_FOUND and its temporary audience gone', async () => {
    const s = await startSender(app, 'deleting', { plan: 'pro', behaviour: { dataDelayMs: 300 } })
    const id = await createdBatch(app, s.key, { template, recipients: addresses('del', 6) })
    const audience = await temporaryAudienceOf(app, id)
    expect(audience).not.toBeNull()

    await waitForBatch(app, s.key, id, (b) => b.status === 'running')
    expect(await deleteBatch(app, s.key, id)).toEqual(INVALID_STATUS)
    expect((await getBatch(app, s.key, id)).status).toBe(200)

    expect(await waitForBatchEnd(app, s.key, id)).toMatchObject({ status: 'completed', sent_count: 6 })
    expect(await deleteBatch(app, s.key, id)).toEqual({
      status: 200,
      body: { success: true, message: humanText },
    })
    expect(await getBatch(app, s.key, id)).toEqual(BATCH_NOT_FOUND)
    expect(await deleteBatch(app, s.key, id)).toEqual(BATCH_NOT_FOUND)
    expect(await answerOf(await app.request(`/audiences/${audience}`, { key: s.key }))).toEqual({
      status: 404,
      body: { error: 'Audience not found' },
    })
    // Its recipient records went with it: the operator finds no batch to list.
    await expect(batchFailures(app.services.sql, id)).rejects.toThrow()
  })

  it('failed: 200 as well', async () => {
    const s = await startSender(app, 'delfailed', {
      plan: 'pro',
      behaviour: { rejectRecipients: ['x@example.com'] },
    })
    const id = await createdBatch(app, s.key, { template, recipients: ['x@example.com'] })
    expect(await waitForBatchEnd(app, s.key, id)).toMatchObject({ status: 'failed' })
    expect(await deleteBatch(app, s.key, id)).toEqual({
      status: 200,
      body: { success: true, message: humanText },
    })
    expect(await getBatch(app, s.key, id)).toEqual(BATCH_NOT_FOUND)
  })
})

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
