import type { QuotaPeriod } from './connections.ts'
import type { Db, Fragment } from './sql.ts'

/**
 * The sending counters (tables daily_usage, quota_usage, connection_pacing), taken under row
 * locks so that every process sharing the database sees one count. A `take*` either takes one
 * unit and says where it was taken, or takes nothing and says how long until it could.
 */

export type Taken<T, Refusal = object> =
  | { taken: true; where: T }
  | ({ taken: false; used: number; waitMs: number } & Refusal)

/** One of the plan's daily emails, in today's UTC day; the count resets at 00:00 UTC. */
export async function takeDailyUnit(db: Db, accountId: number, limit: number): Promise<Taken<string>> {
  const [taken] = await db<{ day: string }[]>`
    insert into daily_usage as d (account_id, day, used)
    values (${accountId}, (mailroom_now() at time zone 'UTC')::date, 1)
    on conflict (account_id, day) do update set used = d.used + 1 where d.used < ${limit}
    returning d.day::text as day`
  if (taken) return { taken: true, where: taken.day }
  const [row] = await db<{ used: number; wait_ms: number }[]>`
    select used,
      ${msUntil(db, db`((mailroom_now() at time zone 'UTC')::date + 1)::timestamp at time zone 'UTC'`)} as wait_ms
    from daily_usage where account_id = ${accountId} and day = (mailroom_now() at time zone 'UTC')::date`
  return { taken: false, used: row?.used ?? limit, waitMs: row?.wait_ms ?? 1000 }
}

/** One unit of the connection's quota in its current fixed UTC window (a day or an hour). */
export async function takeQuotaUnit(
  db: Db,
  connectionId: number,
  quota: number,
  period: 'day' | 'hour',
): Promise<Taken<Date, { resetsAt: Date }>> {
  const [taken] = await db<{ window_start: Date }[]>`
    insert into quota_usage as q (connection_id, window_start, used)
    values (${connectionId}, date_trunc(${period}, mailroom_now(), 'UTC'), 1)
    on conflict (connection_id, window_start) do update set used = q.used + 1 where q.used < ${quota}
    returning q.window_start`
  if (taken) return { taken: true, where: taken.window_start }
  const end = db`window_start + ${`1 ${period}`}::interval`
  const [row] = await db<{ used: number; resets_at: Date; wait_ms: number }[]>`
    select used, ${end} as resets_at, ${msUntil(db, end)} as wait_ms
    from quota_usage
    where connection_id = ${connectionId} and window_start = date_trunc(${period}, mailroom_now(), 'UTC')`
  return {
    taken: false,
    used: row?.used ?? quota,
    waitMs: row?.wait_ms ?? 1000,
    resetsAt: row?.resets_at ?? new Date(),
  }
}

/**
 * One token of the connection's bucket, refilled at `perSecond` up to `capacity`; computed in the
 * statement that takes the token, under the row's lock, so concurrent senders agree. Otherwise
 * the time until a token is due.
 */
export async function takePacingToken(
  db: Db,
  connectionId: number,
  capacity: number,
  perSecond: number,
): Promise<{ taken: true } | { taken: false; waitMs: number }> {
  const refilled = (tokens: Fragment) => db`least(${capacity}::float8,
    ${tokens} + greatest(0, extract(epoch from mailroom_clock() - p.refilled_at)) * ${perSecond}::float8)`
  const [taken] = await db`
    insert into connection_pacing as p (connection_id, tokens, refilled_at)
    values (${connectionId}, ${capacity - 1}, mailroom_clock())
    on conflict (connection_id) do update set tokens = ${refilled(db`p.tokens`)} - 1, refilled_at = mailroom_clock()
    where ${refilled(db`p.tokens`)} >= 1
    returning 1`
  if (taken) return { taken: true }
  const [bucket] = await db<{ tokens: number }[]>`
    select ${refilled(db`p.tokens`)} as tokens from connection_pacing p where connection_id = ${connectionId}`
  return { taken: false, waitMs: Math.ceil(((1 - (bucket?.tokens ?? 0)) / perSecond) * 1000) }
}

/** Gives back units taken for a message that was not sent (its day and quota window). */
export async function giveBack(
  db: Db,
  accountId: number,
  connectionId: number,
  where: { usageDay: string | null; quotaWindow: Date | null },
): Promise<void> {
  if (where.usageDay !== null) {
    await db`update daily_usage set used = greatest(used - 1, 0)
      where account_id = ${accountId} and day = ${where.usageDay}`
  }
  if (where.quotaWindow !== null) {
    await db`update quota_usage set used = greatest(used - 1, 0)
      where connection_id = ${connectionId} and window_start = ${where.quotaWindow}`
  }
}

/** Drops counters older than `days`, which no give-back can reach any more. */
export async function purgeCounters(db: Db, days: number): Promise<number> {
  const daily = await db`delete from daily_usage where day < (now() at time zone 'UTC')::date - ${days}::int`
  const quota = await db`delete from quota_usage where window_start < now() - make_interval(days => ${days})`
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

/** Milliseconds from mailroom_now() until `instant`, computed in the database's clock. */
function msUntil(db: Db, instant: Fragment) {
  return db`greatest(0, ceil(extract(epoch from ${instant} - mailroom_now()) * 1000))::float8`
}
