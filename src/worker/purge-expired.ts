import { PLAN_LIMITS } from '../accounts/plans.ts'
import type { Db } from '../db/sql.ts'

/** Usage counters older than this can no longer be reached by a give-back. */
const COUNTER_KEEP_DAYS = 2

/**
 * Applies the plans' email log retention: outbox records past it go, and with them the
 * idempotency keys they hold. Attempts still in flight are never touched.
 */
export async function purgeExpired(sql: Db): Promise<{ outbox: number; counters: number }> {
  const outbox = await sql`
    delete from outbox o using accounts a
    where a.id = o.account_id and o.status <> 'sending'
      and o.created_at < now() - make_interval(days => case a.plan
        when 'free' then ${PLAN_LIMITS.free.retentionDays}::int
        else ${PLAN_LIMITS.pro.retentionDays}::int end)`
  const daily = await sql`
    delete from daily_usage where day < (now() at time zone 'UTC')::date - ${COUNTER_KEEP_DAYS}::int`
  const quota = await sql`
    delete from quota_usage where window_start < now() - make_interval(days => ${COUNTER_KEEP_DAYS})`
  return { outbox: outbox.count, counters: daily.count + quota.count }
}
