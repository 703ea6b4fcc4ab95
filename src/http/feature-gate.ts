import { createMiddleware } from 'hono/factory'
import { type Feature, requireFeature } from '../accounts/features.ts'
import type { AppEnv } from './env.ts'

/**
 * Pro operations refuse Free accounts before anything else is looked at, body and ids
 * included: whatever the request, the answer would be the same 403.
 */
export function featureGate(feature: Feature) {
  return createMiddleware<AppEnv>(async (c, next) => {
    requireFeature(c.get('caller'), feature)
    await next()
  })
}
