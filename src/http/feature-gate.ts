import type { RouteConfig } from '@hono/zod-openapi'
import { createMiddleware } from 'hono/factory'
import { type Feature, requireFeature } from '../accounts/features.ts'
import type { AppEnv } from './env.ts'

function featureGate(feature: Feature) {
  return createMiddleware<AppEnv>(async (c, next) => {
    requireFeature(c.get('caller'), feature)
    await next()
  })
}

const GATES = {
  asyncSending: featureGate('asyncSending'),
  batches: featureGate('batches'),
  audiences: featureGate('audiences'),
} satisfies Record<Feature, unknown>

/**
 * `route`, refused to plans without `feature` before anything else is looked at, body and ids
 * included: whatever the request, the answer would be the same 403. Attached to the route
 * rather than to a path pattern, so that it runs before the route's validators but leaves
 * unknown paths a plain 404.
 */
export function proOnly<R extends RouteConfig>(feature: Feature, route: R) {
  return { ...route, middleware: [GATES[feature], ...[route.middleware ?? []].flat()] }
}
