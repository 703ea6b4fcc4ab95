import { AppError } from '../errors.ts'
import { PLAN_LIMITS, type Plan } from '../plans.ts'

type CountedResource = 'connections' | 'apiKeys'

const NOUNS: Record<CountedResource, string> = { connections: 'connection', apiKeys: 'API key' }

/** Refuses a new connection or key beyond the plan's count; a downgrade keeps what exists. */
export function assertBelowPlanLimit(plan: Plan, resource: CountedResource, used: number): void {
  const limit = PLAN_LIMITS[plan][resource]
  if (used < limit) return
  throw new AppError(
    'PLAN_LIMIT_REACHED',
    `the ${plan} plan allows ${limit} ${NOUNS[resource]}${limit === 1 ? '' : 's'}; upgrade to Pro for more`,
    { details: { limit, used, upgradeRequired: true } },
  )
}
