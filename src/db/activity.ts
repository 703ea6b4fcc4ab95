import type { QuotaPeriod } from './connections.ts'
import type { Db } from './sql.ts'

/** What an account's sending amounts to, read for its dashboard overview. */

/** Units of the plan's daily limit taken today (UTC, the limit's clock). */
export async function dailyUnitsUsed(db: Db, accountId: number): Promise<number> {
  const [row] = await db<{ used: number }[]>`
    select coalesce(sum(used), 0)::int as used from daily_usage
    where account_id = ${accountId} and day = (mailroom_now() at time zone 'UTC')::date`
  return row?.used ?? 0
}

/** Messages sent today (UTC). */
export async function sentToday(db: Db, accountId: number): Promise<number> {
  const [row] = await db<{ sent: number }[]>`
    select count(*)::int as sent from outbox
    where account_id = ${accountId} and status = 'sent'
      and created_at >= (now() at time zone 'UTC')::date::timestamp at time zone 'UTC' - interval '1 day'
      and sent_at >= (now() at time zone 'UTC')::date::timestamp at time zone 'UTC'`
  return row?.sent ?? 0
}

export interface QuotaUse {
  id: number
  from: string
  quota: number | null
  quota_period: QuotaPeriod | null
  /** Used in the current window (0 without a quota). */
  used: number
  /** When the current window ends (API timestamp), null without a quota. */
  resets_at: string | null
}

/** Each connection's quota and what its current fixed UTC window has used of it. */
export function quotaUse(db: Db, accountId: number): Promise<QuotaUse[]> {
  return db<QuotaUse[]>`
    select c.id, c.from_address as "from", c.quota, c.quota_period, coalesce(q.used, 0)::int as used,
      case when c.quota_period is not null then api_timestamp(
        date_trunc(c.quota_period, mailroom_now(), 'UTC') + ('1 ' || c.quota_period)::interval) end as resets_at
    from connections c
    left join quota_usage q
      on q.connection_id = c.id and q.window_start = date_trunc(c.quota_period, mailroom_now(), 'UTC')
    where c.account_id = ${accountId}
    order by c.id`
}

export interface DayActivity {
  /** YYYY-MM-DD, UTC. */
  day: string
  sent: number
  failed: number
}

/**
 * Sent and failed messages per UTC day over the last `days` days, today included, days without
 * any included: a message counts on the day it was sent, or failed for the last time.
 */
export function dailyActivity(db: Db, accountId: number, days: number): Promise<DayActivity[]> {
  const first = db`((now() at time zone 'UTC')::date - ${days - 1}::int)`
  return db<DayActivity[]>`
    with activity as (
      select (coalesce(sent_at, updated_at) at time zone 'UTC')::date as day,
        count(*) filter (where status = 'sent') as sent, count(*) filter (where status = 'failed') as failed
      from outbox
      where account_id = ${accountId} and status in ('sent', 'failed')
        -- Records are made before they end: the index on created_at bounds the scan.
        and created_at >= ${first}::timestamp at time zone 'UTC' - interval '1 day'
      group by 1
    )
    select to_char(d, 'YYYY-MM-DD') as day, coalesce(a.sent, 0)::int as sent, coalesce(a.failed, 0)::int as failed
    from generate_series(${first}, (now() at time zone 'UTC')::date, interval '1 day') as d
    left join activity a on a.day = d::date
    order by d`
}
