import type { Db } from '../db/sql.ts'

/** graphile-worker's task that sends a connection's queued mail. */
export const QUEUE_TASK = 'deliver_queue'

export interface QueueRunPayload {
  connectionId: number
}

/**
 * Asks for a run of the connection's queue after `delayMs`. One job per connection, keyed, so
 * that many messages make one run and a later request moves the run rather than adding one; and
 * in a named queue of its own, so that a request made while a run is under way makes one more run
 * after it rather than a second one beside it. When a run that starts no later is already waiting
 * to start, nothing is added: it will see this mail (the liveness sweep covers the rare run that
 * started just before this transaction committed).
 * Inside the caller's transaction: mail and the job that sends it are committed together.
 */
export async function scheduleQueueRun(db: Db, connectionId: number, delayMs = 0): Promise<void> {
  const payload: QueueRunPayload = { connectionId }
  const key = `queue:${connectionId}`
  const runAt = db`now() + ${Math.max(0, Math.ceil(delayMs))} * interval '1 millisecond'`
  await db`
    select graphile_worker.add_job(${QUEUE_TASK}, ${db.json({ ...payload })}::json, run_at => ${runAt},
      queue_name => ${key}, job_key => ${key})
    where not exists (
      select 1 from graphile_worker.jobs where key = ${key} and locked_at is null and run_at <= ${runAt})`
}
