import { AppError } from '../app-error.ts'
import { liftedBy, PLAN_LIMITS, type PlanHolder, type PlanLimits } from '../plans.ts'

/** The Pro features, with the name `details.feature` gives them on a refusal. */
const FEATURE_NAMES = {
  asyncSending: 'async_sending',
  batches: 'batch_sending',
  audiences: 'audiences',
} as const satisfies Record<keyof PlanLimits['features'], string>

export type Feature = keyof typeof FEATURE_NAMES

export function hasFeature({ plan }: PlanHolder, feature: Feature): boolean {
  return PLAN_LIMITS[plan].features[feature]
}

/** 403 FEATURE_NOT_AVAILABLE unless the account's plan includes `feature`. */
export function requireFeature(holder: PlanHolder, feature: Feature): void {
  if (hasFeature(holder, feature)) return
  const { accountId, plan } = holder
  throw new AppError(
    'FEATURE_NOT_AVAILABLE',
    `This operation needs the Pro plan; the account is on the ${plan} plan: ${liftedBy(accountId)}`,
    { details: { feature: FEATURE_NAMES[feature], upgradeRequired: true } },
  )
}
