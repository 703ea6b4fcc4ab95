import type { QuotaPeriod } from './connections.ts'
import type { Db, Fragment } from './sql.ts'

/**
 * The sending counters (tables daily_usage, quota_usage, connection_pacing), taken under row
 * locks so that every process sharing the database sees one count.
 */

/** What a send counts against: the plan's daily limit (null: none), the connection's quota (null: none) and its pacing bucket. */
export interface Limits {
  accountId: number
  dailyLimit: number | null
  connectionId: number
  quota: { quota: number; period: 'day' | 'hour' } | null
  bucket: { capacity: number; perSecond: number }
}

/** Where the units were taken: their day and quota window, for a give-back. */
export interface UnitsWhere {
  usageDay: string | null
  quotaWindow: Date | null
}

/** A limit that allows no message now: the first in the order daily limit, quota, pacing. */
export interface LimitRefusal {
  refused: 'daily' | 'quota' | 'pacing'
  /** The limit's count (daily and quota). */
  used: number
  /** Until it allows one again. */
  waitMs: number
  /** The end of the quota's window (a quota refusal). */
  resetsAt: Date | null
}

export type Units = { granted: number } | ({ granted: 0 } & LimitRefusal)

/** What mailroom_take_units answers, as read. */
export interface UnitsRow {
  granted: number
  refused: LimitRefusal['refused'] | null
  used: number
  wait_ms: number
  resets_at: Date | null
}

/** A row of mailroom_take_units as a grant or a refusal. */
export function unitsOf(row: UnitsRow): Units {
  if (row.refused === null) return { granted: row.granted }
  return { granted: 0, refused: row.refused, used: row.used, waitMs: row.wait_ms, resetsAt: row.resets_at }
}

/**
 * mailroom_take_units for up to `wanted` (an int expression) units of every limit, as a FROM
 * item: under the counters' row locks, the grant is the least any limit allows, or none, with the
 * first limit that allows none and how long until it does. They count in the statement's day and
 * quota window.
 */
export function takeUnitsCall(db: Db, limits: Limits, wanted: Fragment): Fragment {
  return db`mailroom_take_units(${limits.accountId}::int, ${limits.dailyLimit}::int, ${limits.connectionId}::int,
      ${limits.quota?.quota ?? null}::int, ${limits.quota?.period ?? null}::text,
      ${limits.bucket.capacity}::float8, ${limits.bucket.perSecond}::float8, ${wanted})`
}

/** Gives back units taken for a message that was not sent (its day and quota window). */
export async function giveBack(
  db: Db,
  accountId: number,
  connectionId: number,
  where: UnitsWhere,
): Promise<void> {
  // Issued together: pipelined in a transaction.
  await Promise.all([
    where.usageDay === null
      ? undefined
      : db`update daily_usage set used = greatest(used - 1, 0)
          where account_id = ${accountId} and day = ${where.usageDay}`,
    where.quotaWindow === null
      ? undefined
      : db`update quota_usage set used = greatest(used - 1, 0)
          where connection_id = ${connectionId} and window_start = ${where.quotaWindow}`,
  ])
}

/** Drops counters older than `days`, which no give-back can reach any more. */
export async function purgeCounters(db: Db, days: number): Promise<number> {
  const daily =
    await db`delete from daily_usage where day < (mailroom_now() at time zone 'UTC')::date - ${days}::int`
  const quota =
    await db`delete from quota_usage where window_start < mailroom_now() - make_interval(days => ${days})`
  return daily.count + quota.count
}

// ---------------------------------------------------------------- What an account's owner sees

/** Units of the plan's daily limit taken today (UTC, the limit's clock). */
export async function dailyUnitsUsed(db: Db, accountId: number): Promise<number> {
  const [row] = await db<{ used: number }[]>`
    select coalesce(sum(used), 0)::int as used from daily_usage
    where account_id = ${accountId} and day = (mailroom_now() at time zone 'UTC')::date`
  return row?.used ?? 0
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
