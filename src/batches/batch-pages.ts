import { requireFeature } from '../accounts/features.ts'
import { batchPage, failedRecipients as failedRecipientRows } from '../db/batches.ts'
import type { FailedRecipient } from '../db/outbox-types.ts'
import type { Sql } from '../db/sql.ts'
import type { Plan } from '../plans.ts'
import { asBatch, type Batch, cancelBatch, deleteBatch, getBatch, retryBatch } from './batches.ts'

export type { Batch }

/** Batches and failed recipients on one page of the dashboard. */
export const BATCH_PAGE_SIZE = 25
export const FAILURE_PAGE_SIZE = 100

/** Who acts on batches in the dashboard: the API's rules hold (Pro only, the account's own batches). */
export interface BatchOwner {
  accountId: number
  plan: Plan
}

export async function listBatches(
  sql: Sql,
  owner: BatchOwner,
  before?: number,
): Promise<{ batches: Batch[]; older: number | undefined }> {
  requireFeature(owner, 'batches')
  const rows = await batchPage(sql, owner.accountId, { before, limit: BATCH_PAGE_SIZE + 1 })
  const batches = rows.slice(0, BATCH_PAGE_SIZE).map(asBatch)
  return { batches, older: rows.length > BATCH_PAGE_SIZE ? batches.at(-1)?.id : undefined }
}

export async function ownBatch(sql: Sql, owner: BatchOwner, id: number): Promise<Batch> {
  requireFeature(owner, 'batches')
  return getBatch(sql, owner.accountId, id)
}

/** A page of the batch's failed recipients with their errors (`mailroom batch failures`). */
export async function failedRecipients(
  sql: Sql,
  owner: BatchOwner,
  id: number,
  after?: number,
): Promise<{ failures: FailedRecipient[]; more: number | undefined }> {
  await ownBatch(sql, owner, id)
  const rows = await failedRecipientRows(sql, id, { after, limit: FAILURE_PAGE_SIZE + 1 })
  const failures = rows.slice(0, FAILURE_PAGE_SIZE)
  return { failures, more: rows.length > FAILURE_PAGE_SIZE ? failures.at(-1)?.outbox_id : undefined }
}

/** Queues the batch's failed recipients again (`mailroom batch retry`). */
export async function retryFailures(sql: Sql, owner: BatchOwner, id: number): Promise<Batch> {
  await ownBatch(sql, owner, id)
  return retryBatch(sql, id, 'dashboard')
}

/** POST /batches/{id}/cancel: only a pending or running batch. */
export function cancelOwnBatch(sql: Sql, owner: BatchOwner, id: number): Promise<Batch> {
  requireFeature(owner, 'batches')
  return cancelBatch(sql, owner.accountId, id)
}

/** DELETE /batches/{id}: only an ended batch. */
export function deleteOwnBatch(sql: Sql, owner: BatchOwner, id: number): Promise<void> {
  requireFeature(owner, 'batches')
  return deleteBatch(sql, owner.accountId, id)
}
