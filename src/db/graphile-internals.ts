import { installedVersion, refuseUnpinned } from '../pinned-version.ts'
import type { Db } from './sql.ts'

/**
 * Every statement on graphile-worker's private tables (`graphile_worker._private_*`), which its
 * documentation says may change in any release: the rest of Mailroom uses its public SQL
 * interface (`add_job`, `force_unlock_workers`, the `jobs` view; see src/db/jobs.ts). Written
 * against one version; `checkPinnedVersion` refuses any other at start. The list and the
 * reasons are in docs/architecture.md ("Third-party internals").
 */
const WRITTEN_AGAINST = '0.17.3'

/** Throws, naming both versions, unless `installed` is the version these internals were written against. */
export function checkPinnedVersion(installed = installedVersion('graphile-worker')): void {
  refuseUnpinned('graphile-worker', WRITTEN_AGAINST, installed)
}

/**
 * Unlocks the jobs that `jobWorkers` (this process's) have held for `heldMs` though none of its
 * tasks runs them (`running`), with their named queues: graphile-worker leaves a job locked when
 * recording its end fails (the database gone at that moment), and its queue (a connection's, an
 * endpoint's) would wait out the 4-hour lock timeout. Unlocked, the job runs again. No public
 * function does this: `force_unlock_workers` unlocks every job of a worker, the running ones too,
 * and those would then run twice at once.
 */
export async function unlockJobsNotRunning(
  db: Db,
  jobWorkers: string[],
  running: number[],
  heldMs: number,
): Promise<void> {
  if (jobWorkers.length === 0) return
  await db`
    with stale as (
      select j.id, j.job_queue_id from graphile_worker._private_jobs j
      where j.locked_by = any(${jobWorkers}::text[]) and not (j.id = any(${running}::bigint[]))
        and j.locked_at < now() - ${heldMs} * interval '1 millisecond'
      for update
    ), queues as (
      update graphile_worker._private_job_queues q set locked_at = null, locked_by = null
      from stale where q.id = stale.job_queue_id and q.locked_by = any(${jobWorkers}::text[])
    )
    update graphile_worker._private_jobs j set locked_at = null, locked_by = null
    from stale where j.id = stale.id`
}
