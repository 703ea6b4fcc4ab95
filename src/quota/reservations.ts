import type { SendingConnection } from '../db/connections.ts'
import type { Reservation } from '../db/outbox.ts'
import type { Db } from '../db/sql.ts'
import { giveBack, type Limits, takeUnits } from '../db/usage.ts'
import { PLAN_LIMITS, type Plan } from '../plans.ts'
import { bucketCapacity } from './pacing.ts'
import { limitReached } from './refusals.ts'

export type { Reservation }

/**
 * Reserves units for up to `wanted` messages at once (the queue claims several): as many as
 * every limit allows, at least one, inside the caller's transaction; otherwise throws the
 * refusal of the first limit that allows none, in the rulings' order, having taken nothing.
 */
export async function reserveUpTo(
  tx: Db,
  plan: Plan,
  accountId: number,
  connection: SendingConnection,
  wanted: number,
): Promise<{ granted: number; reservation: Reservation }> {
  const units = await takeUnits(tx, sendingLimits(plan, accountId, connection), wanted)
  if ('refused' in units) throw limitReached(plan, accountId, connection, units)
  return { granted: units.granted, reservation: { usageDay: units.usageDay, quotaWindow: units.quotaWindow } }
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

/** The limits a send through `connection` counts against. */
export function sendingLimits(plan: Plan, accountId: number, connection: SendingConnection): Limits {
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
