import { randomBytes } from 'node:crypto'
import os from 'node:os'
import type { Sql } from '../db/sql.ts'
import { connectionsWithStrandedMail, releaseOrphanedClaims } from '../sending/queue.ts'
import { scheduleQueueRun } from './jobs.ts'

/** How often a worker process says it is alive. */
export const HEARTBEAT_MS = 5_000
/** Silence after which a worker process is taken for dead and its work handed on. */
export const DEAD_AFTER_MS = 30_000

/** A name for this worker process, unique among all that ever run against the database. */
export function newProcessId(): string {
  return `${os.hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`
}

/**
 * Makes this process known as alive. Done before it takes any work: a message it holds is
 * only ever released when its process has no live entry.
 */
export async function registerProcess(sql: Sql, processId: string): Promise<void> {
  await sql`insert into worker_processes (id) values (${processId})`
}

/** Notes the id graphile-worker locks this process's jobs with, so that a dead process's jobs are unlocked. */
export async function recordJobWorker(sql: Sql, processId: string, jobWorkerId: string): Promise<void> {
  await sql`
    update worker_processes set job_worker_ids = array_append(job_worker_ids, ${jobWorkerId})
    where id = ${processId}`
}

/**
 * Beats for this process, then hands on the work of processes that stopped beating: the
 * messages they held go back to the queue (to be sent again, with the same Message-ID) and
 * graphile-worker's jobs they had locked are unlocked at once, rather than after its own
 * four-hour lock timeout. Due mail that has no queue run coming gets one. Returns how many dead
 * processes were found and how many connections' queues were given a run.
 */
export async function beatAndSweep(
  sql: Sql,
  processId: string,
): Promise<{ dead: number; connections: number }> {
  return sql.begin(async (tx) => {
    // Re-created if a sweep by another process took this one for dead (a long stall): its
    // messages were handed on then, and it carries on with fresh ones.
    await tx`
      insert into worker_processes (id) values (${processId})
      on conflict (id) do update set beat_at = now()`
    const gone = await tx<{ job_worker_ids: string[] }[]>`
      delete from worker_processes where beat_at < now() - ${DEAD_AFTER_MS} * interval '1 millisecond'
      returning job_worker_ids`
    // Also any worker no live process owns that has held a job for as long: one that died
    // before its process recorded it, or whose process is gone. Unlocking a job that is in fact
    // still running only makes it run twice, which queue runs and the purge are made to bear.
    const [{ orphans } = { orphans: [] }] = await tx<{ orphans: string[] }[]>`
      select coalesce(array_agg(distinct j.locked_by), '{}') as orphans from graphile_worker.jobs j
      where j.locked_by is not null and j.locked_at < now() - ${DEAD_AFTER_MS} * interval '1 millisecond'
        and not exists (select 1 from worker_processes p where j.locked_by = any(p.job_worker_ids))`
    const jobWorkers = [...new Set([...gone.flatMap((g) => g.job_worker_ids), ...orphans])]
    if (jobWorkers.length) await tx`select graphile_worker.force_unlock_workers(${jobWorkers}::text[])`
    const released = await releaseOrphanedClaims(tx)
    const stranded = await connectionsWithStrandedMail(tx, HEARTBEAT_MS)
    const connections = new Set([...released, ...stranded])
    for (const connectionId of connections) await scheduleQueueRun(tx, connectionId)
    return { dead: gone.length, connections: connections.size }
  })
}

/** A stopping process leaves nothing behind to be swept. */
export async function unregisterProcess(sql: Sql, processId: string): Promise<void> {
  await sql`delete from worker_processes where id = ${processId}`
}
