import { AppError } from '../app-error.ts'
import { liftedBy, PLAN_LIMITS, type PlanHolder } from '../plans.ts'
import { counted } from '../wording.ts'

type CountedResource = 'connections' | 'apiKeys'

const NOUNS: Record<CountedResource, string> = { connections: 'connection', apiKeys: 'API key' }

/** Refuses a new connection or key beyond the plan's count; a downgrade keeps what exists. */
export function assertBelowPlanLimit(
  { accountId, plan }: PlanHolder,
  resource: CountedResource,
  used: number,
): void {
  const limit = PLAN_LIMITS[plan][resource]
  if (used < limit) return
  throw new AppError(
    'PLAN_LIMIT_REACHED',
    `the ${plan} plan allows ${counted(limit, NOUNS[resource])}; ${liftedBy(accountId)}`,
    { details: { limit, used, upgradeRequired: true } },
  )
}
