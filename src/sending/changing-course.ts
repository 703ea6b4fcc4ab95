import { cancelEmailRow, rescheduleEmailRow } from '../db/cancellation.ts'
import { isStorableId } from '../db/ids.ts'
import type { Db, Sql } from '../db/sql.ts'
import { type Email, emailById } from './emails.ts'
import { notCancelable, notScheduled } from './scheduling.ts'

/**
 * POST /emails/{id}/cancel and PATCH /emails/{id}, and the dashboard's Cancel: the statement
 * decides (src/db/cancellation.ts); when it changed nothing, the email as it reads now says why
 * (another account's, or none, is OUTBOX_RECORD_NOT_FOUND, as GET answers).
 */

/** Cancels the account's email `id` before any attempt; answers it, now canceled. */
export async function cancelEmail(db: Db, accountId: number, id: number): Promise<Email> {
  if (!(isStorableId(id) && (await cancelEmailRow(db, accountId, id)))) {
    throw notCancelable(id, (await emailById(db, accountId, id)).status)
  }
  return emailById(db, accountId, id)
}

/** Moves the account's scheduled email `id` to `at` (already checked: scheduledTime); answers it. */
export async function rescheduleEmail(sql: Sql, accountId: number, id: number, at: Date): Promise<Email> {
  if (!(isStorableId(id) && (await rescheduleEmailRow(sql, accountId, id, at)))) {
    throw notScheduled(id, (await emailById(sql, accountId, id)).status)
  }
  return emailById(sql, accountId, id)
}
