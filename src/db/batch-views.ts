import type { BatchRow } from './batches.ts'
import { batchProgress } from './outbox.ts'
import type { Db } from './sql.ts'

/** Batches as the dashboard lists them: keyset pages, and a batch's failed recipients page by page. */

/** The account's batches, newest first, `limit` of those older than `before`. */
export function batchPage(
  db: Db,
  accountId: number,
  page: { before?: number | undefined; limit: number },
): Promise<BatchRow[]> {
  return db<BatchRow[]>`
    select b.id, b.account_id, b.connection_id, b.name, b.total_count, r.sent_count, r.failed_count, r.started,
      api_timestamp(b.created_at) as created_at,
      api_timestamp(greatest(b.updated_at, r.last_change)) as updated_at
    from batches b cross join lateral (${batchProgress(db)}) r
    where b.account_id = ${accountId} ${page.before === undefined ? db`` : db`and b.id < ${page.before}`}
    order by b.id desc
    limit ${page.limit}`
}

export interface FailedRecipientRow {
  outbox_id: number
  email: string
  error: string | null
  attempts: number
  updated_at: string
}

/** The batch's failed recipients in the order they were queued, `limit` of those after `after`. */
export function failedRecipientPage(
  db: Db,
  batchId: number,
  page: { after?: number | undefined; limit: number },
): Promise<FailedRecipientRow[]> {
  return db<FailedRecipientRow[]>`
    select id as outbox_id, to_addresses[1] as email, error, attempts, api_timestamp(updated_at) as updated_at
    from outbox
    where batch_id = ${batchId} and status = 'failed' ${page.after === undefined ? db`` : db`and id > ${page.after}`}
    order by id
    limit ${page.limit}`
}
