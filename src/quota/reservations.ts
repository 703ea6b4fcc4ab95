import type { SendingConnection } from '../db/connections.ts'
import type { Reservation } from '../db/outbox-types.ts'
import type { Db } from '../db/sql.ts'
import { giveBack, type Limits } from '../db/usage.ts'
import { PLAN_LIMITS, type Plan } from '../plans.ts'
import { bucketCapacity } from './pacing.ts'

export type { Reservation }

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
