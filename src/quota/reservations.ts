import type { SendingConnection } from '../db/connections.ts'
import type { Reservation } from '../db/outbox.ts'
import type { Db } from '../db/sql.ts'
import { giveBack, type Limits, takeUnits } from '../db/usage.ts'
import { PLAN_LIMITS, type Plan } from '../plans.ts'
import { bucketCapacity } from './pacing.ts'
import { limitReached } from './refusals.ts'

export type { Reservation }

/**
 * Reserves units for up to `wanted` messages at once (the queue claims several) inside the
 * caller's transaction, and answers how many: as many as every limit allows, at least one;
 * otherwise throws the refusal of the first limit that allows none, in the rulings' order,
 * having taken nothing. The day and quota window they count in are this transaction's (see
 * claimDue).
 */
export async function reserveUpTo(
  tx: Db,
  plan: Plan,
  accountId: number,
  connection: SendingConnection,
  wanted: number,
): Promise<number> {
  const units = await takeUnits(tx, sendingLimits(plan, accountId, connection), wanted)
  if ('refused' in units) throw limitReached(plan, accountId, connection, units)
  return units.granted
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
