import type { RouteConfig } from '@hono/zod-openapi'
import { standardError } from '../errors.ts'
import * as generated from '../generated/routes.ts'
import type { Api } from './env.ts'

type RouteName = `${(typeof generated.operations)[number]['operationId']}Route`

/** Registers every operation of the contract not yet built, answering 501 NOT_IMPLEMENTED. */
export function registerNotImplemented(api: Api, implemented: ReadonlySet<string>): void {
  for (const { operationId, method, path } of generated.operations) {
    if (implemented.has(operationId)) continue
    const route: RouteConfig = generated[`${operationId}Route` as RouteName]
    api.openapi(route, () => {
      throw standardError(501, 'NOT_IMPLEMENTED', `${method.toUpperCase()} ${path} is not implemented yet`)
    })
  }
}
