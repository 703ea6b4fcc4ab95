/**
 * Crash safety of a batch (docs/decisions.md, "Delivery guarantees"): `kill -9` of a real
 * worker process in the middle of a 300-recipient batch loses nobody, a worker started afterwards
 * finishes it within a minute, and only a recipient whose message was in flight at the kill
 * (outcome unknown) may get it twice, with the same Message-ID both times.
 */
import { afterAll, expect, it } from 'vitest'
import type { RunningWorker } from '../../src/worker/worker.ts'
import { useTestApp } from '../support/app.ts'
import { addresses, batchOf, createdBatch, poll, waitForBatchEnd } from '../support/batches.ts'
import { killWorkerProcessAfter, startWorkerOnceDead, TAKEN_FOR_DEAD_MS } from '../support/queue.ts'
import { startSender } from '../support/sending.ts'

const app = useTestApp()
let worker: RunningWorker | undefined

afterAll(async () => {
  await worker?.stop()
})

/** Where the batch's mail and the queue's jobs stand, for a failure message. */
async function diagnose(connectionId: number): Promise<string> {
  const sql = app.services.sql
  const outbox = await sql`
    select status, claimed_by is not null as claimed, count(*)::int as n from outbox
    where connection_id = ${connectionId} group by 1, 2`
  const jobs = await sql`
    select j.id, j.run_at, j.locked_by, j.attempts, j.last_error, j.key, q.queue_name, q.locked_by as queue_locked_by
    from graphile_worker._private_jobs j left join graphile_worker._private_job_queues q on q.id = j.job_queue_id`
  const processes = await sql`select id, beat_at, job_worker_ids from worker_processes`
  return JSON.stringify({ outbox, jobs, processes })
}

it('kill -9 mid-batch: every one of 300 recipients is delivered within a minute of a restart', {
  timeout: 120_000,
}, async () => {
  const TOTAL = 300
  const s = await startSender(app, 'batchcrash', { plan: 'pro', behaviour: { dataDelayMs: 20 } })
  const recipients = addresses('crash', TOTAL)
  const id = await createdBatch(app, s.key, { template: { subject: 'Crash', text_body: 'x' }, recipients })
  expect((await batchOf(app, s.key, id)).status).toBe('pending')

  const atKill = await killWorkerProcessAfter(app.db.url, s.sink, 50)
  expect(atKill, 'killed in the middle of the batch').toBeLessThan(TOTAL)
  expect((await batchOf(app, s.key, id)).status).toBe('running')
  // Outcome unknown: what the killed worker held in flight, the only mail that may come twice.
  const inFlightAtKill = new Set(
    (
      await app.services.sql<{ message_id: string }[]>`
        select message_id from outbox where connection_id = ${s.connectionId} and status = 'sending'`
    ).map((r) => r.message_id),
  )

  // The worker restarted at once runs on a clock TAKEN_FOR_DEAD_MS ahead: what remains of its
  // minute is what a real restart would have left once the killed process was taken for dead.
  const restartedAt = Date.now()
  const within = 60_000 - TAKEN_FOR_DEAD_MS
  worker = await startWorkerOnceDead(app.db.url)
  // Every recipient, not just as many messages (a re-send may arrive twice).
  const receivedBy = () => new Set(s.sink.messages.flatMap((m) => m.envelope.to))
  let diagnosis = ''
  await poll(
    () => `all ${TOTAL} recipients within a minute of the restart (got ${receivedBy().size}; ${diagnosis})`,
    async () => {
      if (receivedBy().size >= TOTAL) return true
      if (Date.now() - restartedAt > within - 5_000) diagnosis = await diagnose(s.connectionId)
      return undefined
    },
    within,
    100,
  )
  const received = receivedBy()
  expect(recipients.filter((r) => !received.has(r))).toEqual([])
  expect(Date.now() - restartedAt).toBeLessThan(within)

  const ended = await waitForBatchEnd(app, s.key, id, Math.max(2_000, within - (Date.now() - restartedAt)))
  expect(ended).toMatchObject({
    status: 'completed',
    total_count: TOTAL,
    sent_count: TOTAL,
    failed_count: 0,
    progress: 100,
  })

  // The only duplicates allowed: a message in flight at the kill, again, with its Message-ID.
  const copiesOf = new Map<string, string[]>()
  for (const message of s.sink.messages) {
    const to = message.envelope.to[0] as string
    copiesOf.set(to, [...(copiesOf.get(to) ?? []), message.headers.get('message-id') as string])
  }
  const changed = [...copiesOf].filter(([, ids]) => new Set(ids).size !== 1).map(([to]) => to)
  expect(changed, 'recipients who got two different Message-IDs').toEqual([])
  const twiceNotInFlight = [...copiesOf]
    .filter(([, ids]) => ids.length > 1 && !(ids.length === 2 && inFlightAtKill.has(ids[0] as string)))
    .map(([to, ids]) => `${to} ×${ids.length}`)
  expect(
    twiceNotInFlight,
    `sent again though not in flight at the kill (${inFlightAtKill.size} were)`,
  ).toEqual([])
})
