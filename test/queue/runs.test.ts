/**
 * A connection's queue runs (graphile-worker jobs in a named queue of the connection's, so one
 * at a time): a run that leaves nothing queued asks for no next one.
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
