import { standardError } from '../errors.ts'
import type { Caller } from '../keys/keys.ts'
import { PLAN_LIMITS, type PlanLimits } from './plans.ts'

/** The Pro features, with the name `details.feature` gives them on a refusal. */
const FEATURE_NAMES = {
  asyncSending: 'async_sending',
  batches: 'batch_sending',
  audiences: 'audiences',
} as const satisfies Record<keyof PlanLimits['features'], string>

export type Feature = keyof typeof FEATURE_NAMES

/** 403 FEATURE_NOT_AVAILABLE unless the caller's plan includes `feature`. */
export function requireFeature(caller: Caller, feature: Feature): void {
  if (PLAN_LIMITS[caller.plan].features[feature]) return
  throw standardError(
    403,
    'FEATURE_NOT_AVAILABLE',
    `This operation needs the Pro plan; the account is on the ${caller.plan} plan`,
    { feature: FEATURE_NAMES[feature], upgradeRequired: true },
  )
}
