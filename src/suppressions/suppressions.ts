import { AppError, invalidInput } from '../app-error.ts'
import { cursorOf, idOfCursor } from '../db/ids.ts'
import type { Db } from '../db/sql.ts'
import {
  addSuppressions,
  deleteSuppression,
  type SuppressionRow,
  selectSuppressions,
  suppressionOf,
} from '../db/suppressions.ts'
import { uniqueAddresses } from '../sending/recipients.ts'
import { type SuppressionScope, suppressionStrength } from './strength.ts'

/** An entry exactly as the contract shows it. */
export type Suppression = SuppressionRow

export interface SuppressionQuery {
  reason?: SuppressionRow['reason'] | undefined
  email?: string | undefined
  limit: number
  cursor?: string | undefined
}

/** Who adds a manual entry: the API, the dashboard or the operator command. */
export type ManualSource = 'api' | 'dashboard' | 'operator'

export async function listSuppressions(db: Db, accountId: number, query: SuppressionQuery) {
  const before = query.cursor === undefined ? undefined : idOfCursor(query.cursor)
  if (before === null) {
    throw invalidInput([{ path: ['cursor'], message: 'Not a cursor this API gave', code: 'custom' }])
  }
  const page = await selectSuppressions(
    db,
    accountId,
    { reason: query.reason, prefix: query.email },
    { before, size: query.limit },
  )
  return {
    suppressions: page.rows,
    pagination: {
      limit: query.limit,
      hasMore: page.older !== undefined,
      nextCursor: page.older === undefined ? null : cursorOf(page.older),
    },
  }
}

/** The account's entry for the address, or SUPPRESSION_NOT_FOUND. */
export async function getSuppression(db: Db, accountId: number, email: string): Promise<Suppression> {
  const entry = await suppressionOf(db, accountId, email)
  if (!entry) throw notSuppressed(email)
  return entry
}

export async function removeSuppression(db: Db, accountId: number, email: string): Promise<void> {
  if (!(await deleteSuppression(db, accountId, email))) throw notSuppressed(email)
}

/**
 * Adds `manual` entries; an address suppressed already for a reason as strong keeps its entry.
 * Addresses given twice (in any case) count once.
 */
export async function suppressManually(
  db: Db,
  accountId: number,
  request: { emails: string[]; scope?: SuppressionScope | undefined },
  source: ManualSource,
): Promise<{ inserted: number; existing: number }> {
  const emails = uniqueAddresses(request.emails)
  const scope = request.scope ?? 'all'
  const strength = suppressionStrength({ reason: 'manual', scope })
  const inserted = await addSuppressions(
    db,
    accountId,
    emails.map((email) => ({
      email,
      reason: 'manual',
      scope,
      strength,
      detail: null,
      sourceType: source,
      sourceId: null,
    })),
  )
  return { inserted, existing: emails.length - inserted }
}

function notSuppressed(email: string): AppError {
  return new AppError('SUPPRESSION_NOT_FOUND', `${email} is not suppressed on this account`)
}
