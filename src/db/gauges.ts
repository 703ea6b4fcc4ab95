import type { OperationalState } from '../metrics.ts'
import { storedRecipients } from './batches.ts'
import type { Db } from './sql.ts'

/**
 * What /metrics reports of the shared state: the queue, the connections by state and the
 * batches still sending, read in one statement across the outbox, connections and batches'
 * records and stores (a read-only view, as db/ modules may join another family's table for).
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
    with stored as (
      -- Batches' recipients not yet moved into the outbox wait as much as its queued mail; a
      -- scheduled batch's only from its time, as scheduled mail does.
      select b.id, coalesce(b.scheduled_at, b.created_at) as created_at, ${storedRecipients(db, db`b.id`)} as waiting
      from batches b where exists (select 1 from batch_recipients r where r.batch_id = b.id)
        and not coalesce(b.scheduled_at > mailroom_now(), false)
    )
    select q.queued + (select coalesce(sum(waiting), 0) from stored)::int as queued,
      greatest(q.oldest_seconds, coalesce((select extract(epoch from mailroom_now() - min(created_at)) from stored), 0))::float8
        as oldest_seconds,
      c.active, c.disabled, c.paused, b.batches_running
    from (select count(*)::int as queued,
                 coalesce(extract(epoch from mailroom_now() - min(coalesce(scheduled_at, created_at))), 0)::float8
                   as oldest_seconds
          from outbox where status = 'queued' and not coalesce(scheduled_at > mailroom_now(), false)) q,
         (select count(*) filter (where not disabled and not coalesce(paused_until > mailroom_now(), false))::int as active,
                 count(*) filter (where disabled)::int as disabled,
                 count(*) filter (where not disabled and paused_until > mailroom_now())::int as paused
          from connections) c,
         (select count(*)::int as batches_running from (
            select batch_id from outbox where batch_id is not null and status in ('queued', 'sending')
            union select id from stored) r) b`
  if (!row) throw new Error('the operational state was not read')
  return {
    queued: row.queued,
    oldestQueuedSeconds: row.oldest_seconds,
    connections: { active: row.active, disabled: row.disabled, paused: row.paused },
    batchesRunning: row.batches_running,
  }
}
