import type { Db, Fragment } from './sql.ts'

/** The worker processes that are alive, as their heartbeats tell (table worker_processes). */

export async function registerProcess(db: Db, processId: string): Promise<void> {
  await db`insert into worker_processes (id) values (${processId})`
}

/** Notes an id graphile-worker locks this process's jobs with. */
export async function recordJobWorker(db: Db, processId: string, jobWorkerId: string): Promise<void> {
  await db`
    update worker_processes set job_worker_ids = array_append(job_worker_ids, ${jobWorkerId})
    where id = ${processId}`
}

/** A heartbeat; re-creates the entry if another process took this one for dead meanwhile. */
export async function beat(db: Db, processId: string): Promise<void> {
  await db`
    insert into worker_processes (id) values (${processId})
    on conflict (id) do update set beat_at = mailroom_now()`
}

/** Removes the processes silent for `silentMs`; returns the job worker ids they held. */
export async function removeSilentProcesses(db: Db, silentMs: number): Promise<{ jobWorkerIds: string[] }[]> {
  return db<{ jobWorkerIds: string[] }[]>`
    delete from worker_processes where beat_at < mailroom_now() - ${silentMs} * interval '1 millisecond'
    returning job_worker_ids as "jobWorkerIds"`
}

/** The job worker ids of every live process. */
export async function liveJobWorkers(db: Db): Promise<string[]> {
  const [row] = await db<{ ids: string[] }[]>`
    select coalesce(array_agg(w.job_worker), '{}') as ids
    from worker_processes p, unnest(p.job_worker_ids) as w(job_worker)`
  return row?.ids ?? []
}

export async function unregisterProcess(db: Db, processId: string): Promise<void> {
  await db`delete from worker_processes where id = ${processId}`
}

/** The sweeping process's own claims: the rows it holds now (by id) are still being worked on. */
export interface OwnClaims {
  processId: string
  held: number[]
}

/**
 * A condition on a row claimed by a worker process (columns `claimed_by`, `status`, `id`, and
 * `claimedAt`, when it was claimed): its claim is orphaned when its process is gone, when it
 * has been held longer than `leaseSeconds`, or when it is the sweeping process's own but not
 * among those it holds, and older than `graceMs` (lost with the database connection).
 */
export function orphanedClaim(
  db: Db,
  claimedAt: string,
  leaseSeconds: number,
  own: OwnClaims,
  graceMs: number,
): Fragment {
  return db`
    claimed_by is not null and status = 'sending'
    and (claimed_by not in (select id from worker_processes)
         or ${db(claimedAt)} < mailroom_now() - make_interval(secs => ${leaseSeconds})
         or (claimed_by = ${own.processId} and not (id = any(${own.held}::bigint[]))
             and ${db(claimedAt)} < mailroom_now() - ${graceMs} * interval '1 millisecond'))`
}
