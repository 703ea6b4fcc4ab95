export const PLANS = ['free', 'pro'] as const
export type Plan = (typeof PLANS)[number]

export interface PlanLimits {
  connections: number
  apiKeys: number
  templates: number
  /** Emails a day across the account, reset at 00:00 UTC. */
  dailyEmails: number
  /** Days the outbox keeps a record (and so an idempotency key). */
  retentionDays: number
  features: { asyncSending: boolean; batches: boolean; audiences: boolean }
}

export const PLAN_LIMITS: Record<Plan, PlanLimits> = {
  free: {
    connections: 1,
    apiKeys: 1,
    templates: 3,
    dailyEmails: 100,
    retentionDays: 7,
    features: { asyncSending: false, batches: false, audiences: false },
  },
  pro: {
    connections: Number.POSITIVE_INFINITY,
    apiKeys: Number.POSITIVE_INFINITY,
    templates: Number.POSITIVE_INFINITY,
    dailyEmails: Number.POSITIVE_INFINITY,
    retentionDays: 90,
    features: { asyncSending: true, batches: true, audiences: true },
  },
}

export function isPlan(value: string): value is Plan {
  return (PLANS as readonly string[]).includes(value)
}

/** An account as the plan rules see it. */
export interface PlanHolder {
  accountId: number
  plan: Plan
}

/** How a self-hosted operator lifts a Free-plan refusal: there is no billing to upgrade through. */
export function liftedBy(accountId: number): string {
  return `\`mailroom account set-plan ${accountId} pro\` lifts this`
}
