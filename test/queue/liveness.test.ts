/**
 * A connection's queue keeps running whatever became of one of its graphile-worker jobs: a run
 * that graphile-worker gave up on (attempts used up) keeps its key, and neither a new enqueue
 * nor the liveness sweep may take that dead job for a run still coming.
 */
import { describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { enqueued, waitForOutboxStatus } from '../support/queue.ts'
import { type Sender, startSender } from '../support/sending.ts'

// A database of its own for each test: the sweep must find only that test's stranded mail.
const app = useTestApp({}, { each: true })

/** Makes the connection's queue-run job one graphile-worker has failed permanently. */
async function killQueueRun(s: Sender): Promise<void> {
  const dead = await app.services.sql`
    update graphile_worker._private_jobs set attempts = max_attempts, last_error = 'gave up'
    where key = ${`queue:${s.connectionId}`} returning id`
  expect(dead).toHaveLength(1)
}

describe('a queue run graphile-worker gave up on', () => {
  it('does not stop a later enqueue from getting a run of its own', async () => {
    const s = await startSender(app, 'dead-run', { plan: 'pro' })
    const first = await enqueued(app, s.key)
    await killQueueRun(s)
    const second = await enqueued(app, s.key)
    await app.worker()
    await waitForOutboxStatus(app, s.accountId, first, 'sent')
    await waitForOutboxStatus(app, s.accountId, second, 'sent')
    expect(s.sink.messages).toHaveLength(2)
  })

  it('is not taken for a run coming: the liveness sweep gives the stranded mail a run', async () => {
    const s = await startSender(app, 'dead-run', { plan: 'pro' })
    const id = await enqueued(app, s.key)
    await killQueueRun(s)
    await app.worker()
    // Due mail is stranded once it has waited a heartbeat with no run coming; the sweep runs
    // every heartbeat.
    await waitForOutboxStatus(app, s.accountId, id, 'sent', 20_000)
    expect(s.sink.messages).toHaveLength(1)
  })
})
