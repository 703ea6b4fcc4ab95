import type { SendingConnection } from '../db/connections.ts'
import type { LimitRefusal } from '../db/usage.ts'
import { liftedBy, PLAN_LIMITS, type Plan } from '../plans.ts'
import { counted } from '../wording.ts'
import { LimitReached, wholeSeconds } from './limit-reached.ts'

/**
 * What a sending limit answers when it refuses a message, whichever path asked (POST /send's
 * attempt, or the queue's claim).
 */
export function limitReached(
  plan: Plan,
  accountId: number,
  connection: SendingConnection,
  refusal: LimitRefusal,
): LimitReached {
  const { used, waitMs } = refusal
  switch (refusal.refused) {
    case 'daily': {
      const limit = PLAN_LIMITS[plan].dailyEmails
      return new LimitReached(
        waitMs,
        'DAILY_LIMIT_REACHED',
        `The ${plan} plan sends at most ${counted(limit, 'email')} a day; the count resets at 00:00 UTC, and ${liftedBy(accountId)}`,
        { limit, used, upgradeRequired: true },
      )
    }
    case 'quota': {
      const { quota, quota_period: period } = connection
      return new LimitReached(
        waitMs,
        'QUOTA_EXCEEDED',
        `The connection for ${connection.from_address} has used its quota of ${counted(quota ?? 0, 'email')} per ${period}`,
        { limit: quota ?? undefined, used, resetsAt: (refusal.resetsAt ?? new Date()).toISOString() },
      )
    }
    case 'pacing': {
      const retryAfter = wholeSeconds(waitMs)
      return new LimitReached(
        waitMs,
        'RATE_LIMITED',
        `The connection for ${connection.from_address} sends at most ${counted(connection.rate, 'email')} a minute; retry in ${retryAfter} s`,
        { retryAfter },
      )
    }
  }
}
