import type { RouteConfig } from '@hono/zod-openapi'
import { createMiddleware } from 'hono/factory'
import { type Feature, hasFeature, requireFeature } from '../accounts/features.ts'
import type { AppEnv } from './env.ts'

/**
 * A caller cached from an earlier request (see RequestCaller) is refused only on the
 * database's word. Let through, what the route then does rechecks the plan it cached, and
 * anything answered without that check waits for the database's word on the plan too.
 */
function featureGate(feature: Feature) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const requestCaller = c.get('requestCaller')
    const { caller } = requestCaller
    requireFeature(hasFeature(caller, feature) ? caller : await requestCaller.check(), feature)
    await next()
    requireFeature(await requestCaller.check(), feature)
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
