import type { RouteConfig } from '@hono/zod-openapi'
import { featureGate } from '../feature-gate.ts'

const audiencesGate = featureGate('audiences')

/**
 * `route` refused to Free accounts. Attached to the route rather than to a path pattern, so that
 * it runs before the route's validators but leaves unknown paths under /audiences a plain 404.
 */
export function proOnly<R extends RouteConfig>(route: R) {
  return { ...route, middleware: [audiencesGate] }
}
