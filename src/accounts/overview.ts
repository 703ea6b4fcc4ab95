import { dailyActivity, sentToday } from '../db/outbox-browsing.ts'
import type { DayActivity } from '../db/outbox-types.ts'
import { type ConnectionReports, connectionReports } from '../db/report-rates.ts'
import type { Db } from '../db/sql.ts'
import { dailyUnitsUsed, type QuotaUse, quotaUse } from '../db/usage.ts'
import { PLAN_LIMITS, type Plan } from '../plans.ts'

export type { QuotaUse }

/** The chart's span. */
const CHART_DAYS = 30

/** The span of the bounce and complaint rates: the week the mailbox providers look at. */
export const RATE_DAYS = 7

/**
 * The complaint rate Gmail's and Yahoo's sender rules (2024) ask bulk senders to stay under,
 * 0.3 %: a rate at or above it is flagged. Kept as a fraction of whole numbers, so that a rate
 * exactly on the line is compared exactly.
 */
export const COMPLAINT_LINE = { complaints: 3, per: 1000 } as const

/** A connection's bounce and complaint rates over the last RATE_DAYS days. */
export interface ReportRates {
  id: number
  from: string
  /** Recipients its server answered for good: the rates' denominator. */
  sentTo: number
  bounced: number
  complained: number
  /** The complaint rate is at or above COMPLAINT_LINE. */
  overComplaintLine: boolean
}

export interface Overview {
  plan: Plan
  /** The plan's daily limit and what today used of it; null on a plan without one. */
  dailyLimit: { limit: number; used: number } | null
  sentToday: number
  connections: QuotaUse[]
  days: DayActivity[]
  rates: ReportRates[]
}

/**
 * The dashboard's overview of an account: plan, today's sending, quotas, the last 30 days, and
 * each connection's bounce and complaint rates over the last 7.
 */
export async function accountOverview(db: Db, accountId: number, plan: Plan): Promise<Overview> {
  const limit = PLAN_LIMITS[plan].dailyEmails
  const [used, sent, connections, days, reports] = await Promise.all([
    Number.isFinite(limit) ? dailyUnitsUsed(db, accountId) : undefined,
    sentToday(db, accountId),
    quotaUse(db, accountId),
    dailyActivity(db, accountId, CHART_DAYS),
    connectionReports(db, accountId, RATE_DAYS),
  ])
  return {
    plan,
    dailyLimit: used === undefined ? null : { limit, used },
    sentToday: sent,
    connections,
    days,
    rates: connections.map((c) =>
      ratesOf(
        c,
        reports.find((r) => r.connection_id === c.id),
      ),
    ),
  }
}

function ratesOf(connection: QuotaUse, reports: ConnectionReports | undefined): ReportRates {
  const sentTo = reports?.sent_to ?? 0
  const bounced = reports?.bounced ?? 0
  const complained = reports?.complained ?? 0
  return {
    id: connection.id,
    from: connection.from,
    sentTo,
    bounced,
    complained,
    overComplaintLine: sentTo > 0 && complained * COMPLAINT_LINE.per >= COMPLAINT_LINE.complaints * sentTo,
  }
}
