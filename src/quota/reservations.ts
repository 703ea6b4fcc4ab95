import type { SendingConnection } from '../db/connections.ts'
import type { Reservation } from '../db/outbox.ts'
import type { Db } from '../db/sql.ts'
import { giveBack, type Limits, takeUnits } from '../db/usage.ts'
import { liftedBy, PLAN_LIMITS, type Plan } from '../plans.ts'
import { LimitReached, wholeSeconds } from './limit-reached.ts'
import { bucketCapacity } from './pacing.ts'

export type { Reservation }

/**
 * Reserves one message's worth of the plan's daily limit, the connection's quota and a pacing
 * token, in the rulings' order, inside the caller's transaction: the first limit that refuses
 * throws, and nothing is taken.
 */
export async function reserve(
  tx: Db,
  plan: Plan,
  accountId: number,
  connection: SendingConnection,
): Promise<Reservation> {
  return (await reserveUpTo(tx, plan, accountId, connection, 1)).reservation
}

/**
 * Reserves units for up to `wanted` messages at once (the queue claims several): as many as
 * every limit allows, at least one, or throws as `reserve` does.
 */
export async function reserveUpTo(
  tx: Db,
  plan: Plan,
  accountId: number,
  connection: SendingConnection,
  wanted: number,
): Promise<{ granted: number; reservation: Reservation }> {
  const units = await takeUnits(tx, limitsOf(plan, accountId, connection), wanted)
  if (!('refused' in units)) {
    return {
      granted: units.granted,
      reservation: { usageDay: units.usageDay, quotaWindow: units.quotaWindow },
    }
  }
  if (units.refused === 'daily') {
    const limit = PLAN_LIMITS[plan].dailyEmails
    throw new LimitReached(
      units.waitMs,
      'DAILY_LIMIT_REACHED',
      `The ${plan} plan sends at most ${limit} emails a day; the count resets at 00:00 UTC, and ${liftedBy(accountId)}`,
      { limit, used: units.used, upgradeRequired: true },
    )
  }
  if (units.refused === 'quota') {
    const { quota, quota_period: period } = connection
    throw new LimitReached(
      units.waitMs,
      'QUOTA_EXCEEDED',
      `The connection for ${connection.from_address} has used its quota of ${quota} emails per ${period}`,
      { limit: quota ?? undefined, used: units.used, resetsAt: (units.resetsAt ?? new Date()).toISOString() },
    )
  }
  const retryAfter = wholeSeconds(units.waitMs)
  throw new LimitReached(
    units.waitMs,
    'RATE_LIMITED',
    `The connection for ${connection.from_address} sends at most ${connection.rate} emails a minute; retry in ${retryAfter} s`,
    { retryAfter },
  )
}

/** Gives back what a send reserved when nothing was sent. */
export function release(
  db: Db,
  accountId: number,
  connectionId: number,
  reservation: Reservation,
): Promise<void> {
  return giveBack(db, accountId, connectionId, reservation)
}

/** Which counters a send through `connection` takes units of, besides its pacing bucket. */
export function countedLimits(
  plan: Plan,
  connection: SendingConnection,
): { daily: boolean; quotaPeriod: 'day' | 'hour' | null } {
  return {
    daily: Number.isFinite(PLAN_LIMITS[plan].dailyEmails),
    quotaPeriod: connection.quota === null ? null : connection.quota_period,
  }
}

function limitsOf(plan: Plan, accountId: number, connection: SendingConnection): Limits {
  const daily = PLAN_LIMITS[plan].dailyEmails
  const { quota, quota_period: period } = connection
  return {
    accountId,
    dailyLimit: Number.isFinite(daily) ? daily : null,
    connectionId: connection.id,
    quota: quota === null || period === null ? null : { quota, period },
    bucket: { capacity: bucketCapacity(connection.rate), perSecond: connection.rate / 60 },
  }
}
