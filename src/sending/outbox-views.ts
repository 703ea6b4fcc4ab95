import { isStorableId } from '../db/ids.ts'
import {
  type HistoryLine,
  type OutboxDetail,
  type OutboxFilter,
  type OutboxListRow,
  outboxPage,
  outboxRecordDetail,
} from '../db/outbox.ts'
import type { Db } from '../db/sql.ts'
import { AppError } from '../errors.ts'
import { rendered } from './rendered.ts'

export type { HistoryLine, OutboxDetail, OutboxFilter, OutboxListRow }

/** Records on one page of the dashboard's outbox. */
export const OUTBOX_PAGE_SIZE = 50

export interface OutboxPage {
  records: OutboxListRow[]
  /** The `before` of the next (older) page; undefined on the last page. */
  older: number | undefined
}

/** The account's outbox, newest first, filtered and searched, one keyset page at a time. */
export async function browseOutbox(
  db: Db,
  accountId: number,
  filter: OutboxFilter,
  before?: number,
): Promise<OutboxPage> {
  const rows = await outboxPage(db, accountId, filter, { before, limit: OUTBOX_PAGE_SIZE + 1 })
  const records = rows.slice(0, OUTBOX_PAGE_SIZE).map(rendered)
  return { records, older: rows.length > OUTBOX_PAGE_SIZE ? records.at(-1)?.id : undefined }
}

/** One record of the account, whole; another account's is as missing as one that never was. */
export async function outboxRecord(db: Db, accountId: number, id: number): Promise<OutboxDetail> {
  const record = isStorableId(id) ? await outboxRecordDetail(db, accountId, id) : undefined
  if (!record)
    throw new AppError('OUTBOX_RECORD_NOT_FOUND', `There is no outbox record with ID ${id} on this account`)
  return rendered(record)
}
