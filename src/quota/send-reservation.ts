import type { SendingConnection } from '../db/connections.ts'
import type { MessageBodies, OutboxMessage, Reservation } from '../db/outbox.ts'
import { recordSendAttempt } from '../db/send-attempts.ts'
import type { Db } from '../db/sql.ts'
import { PLAN_LIMITS, type Plan } from '../plans.ts'
import { bucketCapacity } from './pacing.ts'
import { dailyLimitReached, paceExceeded, quotaExceeded } from './refusals.ts'

/**
 * POST /send's attempt claimed under its idempotency key, and its units of the plan's daily
 * limit, the connection's quota and pacing reserved, in one statement and the rulings' order
 * (the queue reserves with `reserve`, one limit at a time): the first limit that refuses throws
 * its LimitReached and leaves nothing taken and nothing recorded, the key unused. Undefined when
 * another request already holds the key (nothing taken either).
 */
export async function claimAndReserve(
  db: Db,
  plan: Plan,
  connection: SendingConnection,
  attempt: OutboxMessage & MessageBodies & { idempotencyKey: Buffer | null },
): Promise<{ id: number; reservation: Reservation } | undefined> {
  const dailyLimit = PLAN_LIMITS[plan].dailyEmails
  const { quota, quota_period: period } = connection
  const quotaLimit = quota !== null && period !== null ? { quota, period } : null
  const result = await recordSendAttempt(db, attempt, {
    dailyLimit: Number.isFinite(dailyLimit) ? dailyLimit : null,
    quota: quotaLimit,
    pacing: { capacity: bucketCapacity(connection.rate), perSecond: connection.rate / 60 },
  })
  switch (result.refused) {
    case null:
      return { id: result.id, reservation: { usageDay: result.usageDay, quotaWindow: result.quotaWindow } }
    case 'key':
      return undefined
    case 'daily':
      throw dailyLimitReached(plan, attempt.accountId, dailyLimit, result.used ?? dailyLimit, result.waitMs)
    case 'quota': {
      // Only a connection with a quota can be refused by it.
      const { quota, period } = quotaLimit ?? { quota: 0, period: 'day' }
      throw quotaExceeded(
        connection.from_address,
        quota,
        period,
        result.used ?? quota,
        result.resetsAt,
        result.waitMs,
      )
    }
    case 'pacing':
      throw paceExceeded(connection, result.waitMs)
  }
}
