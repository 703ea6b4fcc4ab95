import type { QuotaPeriod, SendingConnection } from '../db/connections.ts'
import { liftedBy, type Plan } from '../plans.ts'
import { LimitReached, wholeSeconds } from './limit-reached.ts'

/**
 * What each sending limit answers when it refuses a message, whichever path asked (the queue's
 * reservations one limit at a time, or POST /send's single statement).
 */

export function dailyLimitReached(
  plan: Plan,
  accountId: number,
  limit: number,
  used: number,
  waitMs: number,
): LimitReached {
  return new LimitReached(
    waitMs,
    'DAILY_LIMIT_REACHED',
    `The ${plan} plan sends at most ${limit} emails a day; the count resets at 00:00 UTC, and ${liftedBy(accountId)}`,
    { limit, used, upgradeRequired: true },
  )
}

export function quotaExceeded(
  from: string,
  quota: number,
  period: QuotaPeriod,
  used: number,
  resetsAt: Date,
  waitMs: number,
): LimitReached {
  return new LimitReached(
    waitMs,
    'QUOTA_EXCEEDED',
    `The connection for ${from} has used its quota of ${quota} emails per ${period}`,
    { limit: quota, used, resetsAt: resetsAt.toISOString() },
  )
}

export function paceExceeded(connection: SendingConnection, waitMs: number): LimitReached {
  const retryAfter = wholeSeconds(waitMs)
  return new LimitReached(
    waitMs,
    'RATE_LIMITED',
    `The connection for ${connection.from_address} sends at most ${connection.rate} emails a minute; retry in ${retryAfter} s`,
    { retryAfter },
  )
}
