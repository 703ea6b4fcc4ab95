import type { DashboardContext } from './env.ts'

/**
 * The numeric ID in the path (routes match `[0-9]+` only). A number too large to be any row's
 * ID is simply found nowhere: the domain checks that before it reaches SQL.
 */
export function idParam(c: DashboardContext, name = 'id'): number {
  return Number(c.req.param(name))
}
