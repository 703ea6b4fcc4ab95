/**
 * A connection's queue runs (graphile-worker jobs in a named queue of the connection's, so one
 * at a time): a run asked for while one is under way starts as soon as that one ends, not at the
 * worker's next poll (a trigger: src/db/functions/20_mailroom_announce_released_job_queue.sql),
 * and a run that leaves nothing queued asks for no next one.
 */
import { describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { enqueued, holdsUntil, keyedRuns, waitFor, waitForOutboxStatus } from '../support/queue.ts'
import { type Sender, startSender } from '../support/sending.ts'

const app = useTestApp({}, { each: true })

const runsOf = (s: Sender) => keyedRuns(app, `queue:${s.connectionId}`)

/** Waits until the connection has no run running or waiting. */
function noRunLeft(s: Sender, timeoutMs: number): Promise<true> {
  return waitFor(
    async () => `no run of the queue left (runs: ${JSON.stringify(await runsOf(s))})`,
    async () => ((await runsOf(s)).length === 0 ? true : undefined),
    timeoutMs,
  )
}

describe("a connection's queue runs", () => {
  // The worker polls once a minute: only the end of the run before can start the next in time.
  it('the next starts as soon as the one before ends, not at the next poll', {
    timeout: 30_000,
  }, async () => {
    const s = await startSender(app, 'handover', { plan: 'pro', behaviour: { dataDelayMs: 500 } })
    await app.worker({ pollIntervalMs: 60_000 })
    const first = await enqueued(app, s.key)
    await waitFor('the first run to be sending', () => (s.sink.receiving > 0 ? true : undefined))
    // Queued while the run is under way: the run takes it, and a next run is asked for after it.
    const second = await enqueued(app, s.key)
    expect(await runsOf(s)).toEqual([true, false])
    // graphile-worker asks for its next job without waiting for the end of the last to commit:
    // that end is held back here until it waits, so that the ask certainly comes first.
    await app.services.sql.begin(async (tx) => {
      await tx`select 1 from graphile_worker._private_job_queues where queue_name = ${`queue:${s.connectionId}`}
        for share`
      await waitFor("the first run's end to wait", async () => {
        const waiting = await app.services.sql`select 1 from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock'`
        return waiting.length > 0 ? true : undefined
      })
    })
    await waitForOutboxStatus(app, s.accountId, first, 'sent')
    await waitForOutboxStatus(app, s.accountId, second, 'sent')
    expect(await noRunLeft(s, 10_000)).toBe(true)
  })

  it('one that leaves nothing queued asks for no next run', { timeout: 30_000 }, async () => {
    const s = await startSender(app, 'last-run', { plan: 'pro' })
    await app.worker()
    await waitForOutboxStatus(app, s.accountId, await enqueued(app, s.key), 'sent')
    await noRunLeft(s, 5_000)
    // The worker polls every 100 ms here: a run asked for would show within the second.
    const checked = await holdsUntil(
      Date.now() + 1_000,
      () => runsOf(s),
      (runs) => expect(runs).toEqual([]),
    )
    expect(checked).toBeGreaterThan(0)
  })
})
