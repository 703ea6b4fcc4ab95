import { PLAN_LIMITS } from '../accounts/plans.ts'
import type { Db } from '../db/sql.ts'

/** Usage counters older than this can no longer be reached by a give-back. */
const COUNTER_KEEP_DAYS = 2

/**
 * Applies the plans' email log retention: outbox records past it go, and with them the
 * idempotency keys they hold; so do ended batches. Mail still queued or in flight is never
 * touched, nor the records of a batch that still exists (they are its recipients).
 */
export async function purgeExpired(sql: Db): Promise<{ batches: number; outbox: number; counters: number }> {
  const retention = sql`make_interval(days => case a.plan
        when 'free' then ${PLAN_LIMITS.free.retentionDays}::int
        else ${PLAN_LIMITS.pro.retentionDays}::int end)`
  // An ended batch past retention goes first; its records are then plain outbox records.
  const [batches] = await sql<{ count: number }[]>`
    with gone as (
      delete from batches b using accounts a
      where a.id = b.account_id and b.created_at < now() - ${retention}
        and not exists (select 1 from outbox o where o.batch_id = b.id and o.status in ('queued', 'sending'))
      returning b.temporary_audience_id
    ), audiences_gone as (
      delete from audiences where id in (select temporary_audience_id from gone)
    )
    select count(*)::int as count from gone`
  const outbox = await sql`
    delete from outbox o using accounts a
    where a.id = o.account_id and o.status in ('sent', 'failed') and o.batch_id is null
      and o.created_at < now() - ${retention}`
  const daily = await sql`
    delete from daily_usage where day < (now() at time zone 'UTC')::date - ${COUNTER_KEEP_DAYS}::int`
  const quota = await sql`
    delete from quota_usage where window_start < now() - make_interval(days => ${COUNTER_KEEP_DAYS})`
  return { batches: batches?.count ?? 0, outbox: outbox.count, counters: daily.count + quota.count }
}
