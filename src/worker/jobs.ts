import type { Db, Fragment } from '../db/sql.ts'

/** graphile-worker's task that sends a connection's queued mail. */
export const QUEUE_TASK = 'deliver_queue'

export interface QueueRunPayload {
  connectionId: number
}

/**
 * A query that asks for a run of the connection's queue after `delayMs`. One job per connection,
 * keyed, so that many messages make one run and a later request moves the run rather than adding
 * one; and in a named queue of its own, so that a request made while a run is under way makes one
 * more run after it rather than a second one beside it. When a run that starts no later is
 * already waiting to start, nothing is added: it will see this mail (the liveness sweep covers
 * the rare run that started just before the mail was committed). A fragment, so that it can ride
 * in the statement that queues the mail: both are committed together, in one round trip.
 */
export function queueRunRequest(db: Db, connectionId: number, delayMs = 0): Fragment {
  const payload: QueueRunPayload = { connectionId }
  const key = `queue:${connectionId}`
  const runAt = db`now() + ${Math.max(0, Math.ceil(delayMs))}::int * interval '1 millisecond'`
  return db`
    select graphile_worker.add_job(${QUEUE_TASK}::text, ${db.json({ ...payload })}::json, run_at => ${runAt},
      queue_name => ${key}::text, job_key => ${key}::text)
    where not exists (
      select 1 from graphile_worker.jobs where key = ${key}::text and locked_at is null and run_at <= ${runAt})`
}

/** Asks for a run of the connection's queue after `delayMs` (see queueRunRequest). */
export async function scheduleQueueRun(db: Db, connectionId: number, delayMs = 0): Promise<void> {
  await db`${queueRunRequest(db, connectionId, delayMs)}`
}
