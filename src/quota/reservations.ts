import { PLAN_LIMITS, type Plan } from '../accounts/plans.ts'
import type { SendingConnection } from '../connections/selection.ts'
import type { Db, Fragment } from '../db/sql.ts'
import { LimitReached } from './limit-reached.ts'
import { takePacingToken } from './pacing.ts'

/** Where a send's units were taken, so that a give-back returns them to the same windows. */
export interface Reservation {
  usageDay: string | null
  quotaWindow: Date | null
}

/**
 * Reserves one message's worth of the plan's daily limit, the connection's quota and a pacing
 * token, in the rulings' order, inside the caller's transaction: the first limit that refuses
 * throws, and the transaction's rollback returns whatever was taken before it. Row locks on the
 * counters make every process that shares the database see one count.
 */
export async function reserve(
  tx: Db,
  plan: Plan,
  accountId: number,
  connection: SendingConnection,
): Promise<Reservation> {
  const usageDay = await reserveDailyLimit(tx, plan, accountId)
  const quotaWindow = await reserveQuota(tx, connection)
  await takePacingToken(tx, connection)
  return { usageDay, quotaWindow }
}

/** Gives back what a send reserved when nothing was sent. */
export async function release(
  sql: Db,
  accountId: number,
  connectionId: number,
  reservation: Reservation,
): Promise<void> {
  if (reservation.usageDay !== null) {
    await sql`update daily_usage set used = greatest(used - 1, 0)
      where account_id = ${accountId} and day = ${reservation.usageDay}`
  }
  if (reservation.quotaWindow !== null) {
    await sql`update quota_usage set used = greatest(used - 1, 0)
      where connection_id = ${connectionId} and window_start = ${reservation.quotaWindow}`
  }
}

async function reserveDailyLimit(tx: Db, plan: Plan, accountId: number): Promise<string | null> {
  const limit = PLAN_LIMITS[plan].dailyEmails
  if (!Number.isFinite(limit)) return null
  const [taken] = await tx<{ day: string }[]>`
    insert into daily_usage as d (account_id, day, used)
    values (${accountId}, (mailroom_now() at time zone 'UTC')::date, 1)
    on conflict (account_id, day) do update set used = d.used + 1 where d.used < ${limit}
    returning d.day::text as day`
  if (taken) return taken.day
  const [row] = await tx<{ used: number; wait_ms: number }[]>`
    select used,
      ${msUntil(tx, tx`((mailroom_now() at time zone 'UTC')::date + 1)::timestamp at time zone 'UTC'`)} as wait_ms
    from daily_usage where account_id = ${accountId} and day = (mailroom_now() at time zone 'UTC')::date`
  throw new LimitReached(
    row?.wait_ms ?? 1000,
    'DAILY_LIMIT_REACHED',
    `The ${plan} plan sends at most ${limit} emails a day; the count resets at 00:00 UTC`,
    { limit, used: row?.used ?? limit, upgradeRequired: true },
  )
}

async function reserveQuota(tx: Db, connection: SendingConnection): Promise<Date | null> {
  if (connection.quota === null || connection.quota_period === null) return null
  const [taken] = await tx<{ window_start: Date }[]>`
    insert into quota_usage as q (connection_id, window_start, used)
    values (${connection.id}, date_trunc(${connection.quota_period}, mailroom_now(), 'UTC'), 1)
    on conflict (connection_id, window_start) do update set used = q.used + 1 where q.used < ${connection.quota}
    returning q.window_start`
  if (taken) return taken.window_start
  const end = tx`window_start + ${`1 ${connection.quota_period}`}::interval`
  const [row] = await tx<{ used: number; resets_at: Date; wait_ms: number }[]>`
    select used, ${end} as resets_at, ${msUntil(tx, end)} as wait_ms
    from quota_usage
    where connection_id = ${connection.id} and window_start = date_trunc(${connection.quota_period}, mailroom_now(), 'UTC')`
  throw new LimitReached(
    row?.wait_ms ?? 1000,
    'QUOTA_EXCEEDED',
    `The connection for ${connection.from_address} has used its quota of ${connection.quota} emails per ${connection.quota_period}`,
    {
      limit: connection.quota,
      used: row?.used ?? connection.quota,
      resetsAt: (row?.resets_at ?? new Date()).toISOString(),
    },
  )
}

/** Milliseconds from mailroom_now() until `instant`, computed in the database's clock. */
function msUntil(tx: Db, instant: Fragment) {
  return tx`greatest(0, ceil(extract(epoch from ${instant} - mailroom_now()) * 1000))::float8`
}
