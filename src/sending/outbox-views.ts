import { AppError } from '../app-error.ts'
import { isStorableId } from '../db/ids.ts'
import { outboxPage, outboxRecordDetail } from '../db/outbox-browsing.ts'
import type { ListedRecord, OutboxDetail, OutboxFilter } from '../db/outbox-types.ts'
import type { Db } from '../db/sql.ts'
import { EmailAddressSchema } from '../generated/routes.ts'
import { rendered } from './rendered.ts'

/** Records on one page of the dashboard's outbox. */
export const OUTBOX_PAGE_SIZE = 50

export interface OutboxPage {
  records: ListedRecord[]
  /** The `before` of the next (older) page; undefined on the last page. */
  older: number | undefined
}

/**
 * The account's outbox, newest first, filtered and searched, one keyset page of `size` records
 * (the dashboard's size unless said) older than the record `before`: what the API, the dashboard
 * and `mailroom outbox list` list, read here alone.
 */
export async function listOutbox(
  db: Db,
  accountId: number,
  filter: OutboxFilter,
  page: { before?: number | undefined; size?: number } = {},
): Promise<OutboxPage> {
  const { before, size = OUTBOX_PAGE_SIZE } = page
  const rows = await outboxPage(db, accountId, searched(filter), { before, limit: size + 1 })
  const records = rows.slice(0, size).map(rendered)
  return { records, older: rows.length > size ? records.at(-1)?.id : undefined }
}

/**
 * A search that is a whole address looks for that recipient: the records whose to, cc or bcc is
 * that address, any case, read through the recipient index. Anything else is looked for as part
 * of a subject or an address.
 */
function searched(filter: OutboxFilter): OutboxFilter {
  const { search } = filter
  if (search === undefined || !EmailAddressSchema.safeParse(search).success) return filter
  return { ...filter, search: undefined, recipient: search }
}

/** One record of the account, whole; another account's is as missing as one that never was. */
export async function outboxRecord(db: Db, accountId: number, id: number): Promise<OutboxDetail> {
  const record = isStorableId(id) ? await outboxRecordDetail(db, accountId, id) : undefined
  if (!record)
    throw new AppError('OUTBOX_RECORD_NOT_FOUND', `There is no outbox record with ID ${id} on this account`)
  return rendered(record)
}

/**
 * A day the outbox can be filtered by: `YYYY-MM-DD` naming a real calendar day (not February
 * 30th, which JavaScript would roll over and PostgreSQL refuse), from year 1.
 */
export function isCalendarDay(text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text) || text.startsWith('0000')) return false
  const day = new Date(`${text}T00:00:00Z`)
  return !Number.isNaN(day.getTime()) && day.toISOString().slice(0, 10) === text
}
