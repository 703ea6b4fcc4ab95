import { isStorableId } from '../db/ids.ts'
import type { DashboardContext } from './env.ts'

/**
 * The numeric ID in the path (routes match `[0-9]+` only). A number too large to be any row's
 * ID is simply found nowhere: the domain checks that before it reaches SQL.
 */
export function idParam(c: DashboardContext, name = 'id'): number {
  return Number(c.req.param(name))
}

/**
 * An ID given in a form field or the query string: digits naming a number some row could have
 * (PostgreSQL's integer), else undefined. A larger number names no row and must not reach SQL.
 */
export function storableId(raw: string | undefined): number | undefined {
  if (raw === undefined || !/^[0-9]{1,10}$/.test(raw)) return undefined
  const value = Number(raw)
  return isStorableId(value) ? value : undefined
}
