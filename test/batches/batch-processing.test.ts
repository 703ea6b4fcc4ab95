/**
 * Batch processing with a worker against real TLS SMTP sinks: a batch's states and delivery
 * guarantees, refused addresses with `mailroom batch failures` and `batch retry`, and
 * DELETE /batches/{id} once it ran.
 */
import { describe, expect, it } from 'vitest'
import { batchFailures } from '../../src/batches/batches.ts'
import { useTestApp } from '../support/app.ts'
import { receivedCounts, template, useBatchWorker } from '../support/batch-processing.ts'
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
import { startSender } from '../support/sending.ts'

const app = useTestApp()
useBatchWorker(app)

const ORDER = ['pending', 'running', 'completed'] as const

/** Each address refused at RCPT for a policy reason (550 5.7.1), naming it. */
function policyRefusals(refused: string[]) {
  return Object.fromEntries(
    refused.map((r) => [r, { code: 550, message: `5.7.1 <${r}>: Recipient address rejected` }]),
  )
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
    // A policy refusal: it suppresses no one, so a retry goes back to the server.
    const s = await startSender(app, 'refused', {
      plan: 'pro',
      behaviour: { recipientReplies: policyRefusals(refused) },
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
      expect(failure.error).toMatch(/^550 5\.7\.1 /)
      expect(failure.error).toContain(failure.email)
      expect(failure.error).toContain('Recipient address rejected')
    }
    // A permanent refusal is not retried by the worker.
    expect(failures.every((f) => f.attempts === 1)).toBe(true)

    // The provider accepts them now; the operator queues them again.
    s.sink.setBehaviour({ recipientReplies: {} })
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
      behaviour: { recipientReplies: policyRefusals(refused) },
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

    s.sink.setBehaviour({ recipientReplies: {} })
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
