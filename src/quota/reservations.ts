import type { SendingConnection } from '../db/connections.ts'
import type { Reservation } from '../db/outbox.ts'
import type { Db } from '../db/sql.ts'
import { giveBack, takeDailyUnit, takeQuotaUnit } from '../db/usage.ts'
import { liftedBy, PLAN_LIMITS, type Plan } from '../plans.ts'
import { LimitReached } from './limit-reached.ts'
import { takeToken } from './pacing.ts'

export type { Reservation }

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
  await takeToken(tx, connection)
  return { usageDay, quotaWindow }
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

async function reserveDailyLimit(tx: Db, plan: Plan, accountId: number): Promise<string | null> {
  const limit = PLAN_LIMITS[plan].dailyEmails
  if (!Number.isFinite(limit)) return null
  const unit = await takeDailyUnit(tx, accountId, limit)
  if (unit.taken) return unit.where
  throw new LimitReached(
    unit.waitMs,
    'DAILY_LIMIT_REACHED',
    `The ${plan} plan sends at most ${limit} emails a day; the count resets at 00:00 UTC, and ${liftedBy(accountId)}`,
    { limit, used: unit.used, upgradeRequired: true },
  )
}

async function reserveQuota(tx: Db, connection: SendingConnection): Promise<Date | null> {
  const { quota, quota_period: period } = connection
  if (quota === null || period === null) return null
  const unit = await takeQuotaUnit(tx, connection.id, quota, period)
  if (unit.taken) return unit.where
  throw new LimitReached(
    unit.waitMs,
    'QUOTA_EXCEEDED',
    `The connection for ${connection.from_address} has used its quota of ${quota} emails per ${period}`,
    { limit: quota, used: unit.used, resetsAt: unit.resetsAt.toISOString() },
  )
}
