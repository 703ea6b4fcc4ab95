import type { SendingConnection } from '../db/connections.ts'
import type { Reservation } from '../db/outbox.ts'
import type { Db } from '../db/sql.ts'
import { giveBack, takeDailyUnit, takeQuotaUnit } from '../db/usage.ts'
import { PLAN_LIMITS, type Plan } from '../plans.ts'
import { takeToken } from './pacing.ts'
import { dailyLimitReached, quotaExceeded } from './refusals.ts'

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
  throw dailyLimitReached(plan, accountId, limit, unit.used, unit.waitMs)
}

async function reserveQuota(tx: Db, connection: SendingConnection): Promise<Date | null> {
  const { quota, quota_period: period } = connection
  if (quota === null || period === null) return null
  const unit = await takeQuotaUnit(tx, connection.id, quota, period)
  if (unit.taken) return unit.where
  throw quotaExceeded(connection.from_address, quota, period, unit.used, unit.resetsAt, unit.waitMs)
}
