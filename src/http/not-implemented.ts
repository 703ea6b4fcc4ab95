import type { RouteConfig } from '@hono/zod-openapi'
import { standardError } from '../errors.ts'
import { operations } from '../generated/routes.ts'
import type { Api } from './env.ts'

/** Registers every operation of the contract not yet built, answering 501 NOT_IMPLEMENTED. */
export function registerNotImplemented(api: Api, implemented: ReadonlySet<string>): void {
  for (const { operationId, method, path, route } of operations) {
    if (implemented.has(operationId)) continue
    api.openapi(route as RouteConfig, () => {
      throw standardError(501, 'NOT_IMPLEMENTED', `${method.toUpperCase()} ${path} is not implemented yet`)
    })
  }
}
