import { dailyActivity, sentToday } from '../db/outbox-browsing.ts'
import type { DayActivity } from '../db/outbox-types.ts'
import type { Db } from '../db/sql.ts'
import { dailyUnitsUsed, type QuotaUse, quotaUse } from '../db/usage.ts'
import { PLAN_LIMITS, type Plan } from '../plans.ts'

export type { QuotaUse }

/** The chart's span. */
const CHART_DAYS = 30

export interface Overview {
  plan: Plan
  /** The plan's daily limit and what today used of it; null on a plan without one. */
  dailyLimit: { limit: number; used: number } | null
  sentToday: number
  connections: QuotaUse[]
  days: DayActivity[]
}

/** The dashboard's overview of an account: plan, today's sending, quotas, the last 30 days. */
export async function accountOverview(db: Db, accountId: number, plan: Plan): Promise<Overview> {
  const limit = PLAN_LIMITS[plan].dailyEmails
  const [used, sent, connections, days] = await Promise.all([
    Number.isFinite(limit) ? dailyUnitsUsed(db, accountId) : undefined,
    sentToday(db, accountId),
    quotaUse(db, accountId),
    dailyActivity(db, accountId, CHART_DAYS),
  ])
  return {
    plan,
    dailyLimit: used === undefined ? null : { limit, used },
    sentToday: sent,
    connections,
    days,
  }
}
