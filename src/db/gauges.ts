import type { OperationalState } from '../metrics.ts'
import type { Db } from './sql.ts'

/**
 * What /metrics reports of the shared state: the queue, the connections by state and the
 * batches still sending, read in one statement across the outbox, connections and batches'
 * records (a read-only view, as db/ modules may join another family's table for).
 */
export async function operationalState(db: Db): Promise<OperationalState> {
  const [row] = await db<
    {
      queued: number
      oldest_seconds: number
      active: number
      disabled: number
      paused: number
      batches_running: number
    }[]
  >`
    select q.queued, q.oldest_seconds, c.active, c.disabled, c.paused, b.batches_running
    from (select count(*)::int as queued,
                 coalesce(extract(epoch from now() - min(created_at)), 0)::float8 as oldest_seconds
          from outbox where status = 'queued') q,
         (select count(*) filter (where not disabled and not coalesce(paused_until > mailroom_now(), false))::int as active,
                 count(*) filter (where disabled)::int as disabled,
                 count(*) filter (where not disabled and paused_until > mailroom_now())::int as paused
          from connections) c,
         (select count(distinct batch_id)::int as batches_running
          from outbox where batch_id is not null and status in ('queued', 'sending')) b`
  if (!row) throw new Error('the operational state was not read')
  return {
    queued: row.queued,
    oldestQueuedSeconds: row.oldest_seconds,
    connections: { active: row.active, disabled: row.disabled, paused: row.paused },
    batchesRunning: row.batches_running,
  }
}
