import type { OutboxStatus } from './outbox.ts'
import type { Db, Fragment } from './sql.ts'

/** The outbox as the dashboard reads it: filtered, searched and keyset-paged lists, and one record whole. */

export interface OutboxFilter {
  status?: OutboxStatus | undefined
  connectionId?: number | undefined
  batchId?: number | undefined
  /** First day (YYYY-MM-DD, UTC), included. */
  from?: string | undefined
  /** Last day (YYYY-MM-DD, UTC), included. */
  to?: string | undefined
  /** Part of a recipient's address or of the subject, any case. */
  search?: string | undefined
}

export interface OutboxListRow {
  id: number
  status: OutboxStatus
  from: string
  to: string[]
  subject: string
  error: string | null
  attempts: number
  created_at: string
  sent_at: string | null
}

/** `%` and `_` in the search are plain characters, not LIKE's wildcards. */
function containing(text: string): string {
  return `%${text.replace(/[\\%_]/g, '\\$&')}%`
}

function conditions(db: Db, filter: OutboxFilter): Fragment[] {
  const parts: Fragment[] = []
  if (filter.status) parts.push(db`status = ${filter.status}`)
  if (filter.connectionId !== undefined) parts.push(db`connection_id = ${filter.connectionId}`)
  if (filter.batchId !== undefined) parts.push(db`batch_id = ${filter.batchId}`)
  if (filter.from) parts.push(db`created_at >= ${filter.from}::date::timestamp at time zone 'UTC'`)
  if (filter.to) parts.push(db`created_at < (${filter.to}::date + 1)::timestamp at time zone 'UTC'`)
  if (filter.search) {
    const pattern = containing(filter.search)
    parts.push(db`(subject ilike ${pattern}
      or array_to_string(to_addresses || cc_addresses || bcc_addresses, ' ') ilike ${pattern})`)
  }
  return parts
}

/** Newest first, `limit` records older than the record `before` (from the newest without it). */
export function outboxPage(
  db: Db,
  accountId: number,
  filter: OutboxFilter,
  page: { before?: number | undefined; limit: number },
): Promise<OutboxListRow[]> {
  const where = [db`account_id = ${accountId}`, ...conditions(db, filter)]
  if (page.before !== undefined) where.push(db`id < ${page.before}`)
  const all = where.reduce((sum, part) => db`${sum} and ${part}`)
  return db<OutboxListRow[]>`
    select id, status, from_address as "from", to_addresses as "to", subject, error, attempts,
      api_timestamp(created_at) as created_at, api_timestamp(sent_at) as sent_at
    from outbox where ${all}
    order by id desc limit ${page.limit}`
}

export interface OutboxDetail extends OutboxListRow {
  cc: string[]
  bcc: string[]
  message_id: string
  connection_id: number | null
  /** The connection's sending address, null when it was deleted. */
  connection_from: string | null
  batch_id: number | null
  /** The batch's name, null when there is no batch (or it was deleted). */
  batch_name: string | null
  next_attempt_at: string | null
  updated_at: string
  /** Null when the content was not kept. */
  text_body: string | null
  html_body: string | null
}

/** One record of the account, with its content when kept. */
export async function outboxRecordDetail(
  db: Db,
  accountId: number,
  id: number,
): Promise<OutboxDetail | undefined> {
  const [row] = await db<OutboxDetail[]>`
    select o.id, o.status, o.from_address as "from", o.to_addresses as "to", o.cc_addresses as cc,
      o.bcc_addresses as bcc, o.subject, o.error, o.attempts, o.message_id, o.connection_id,
      c.from_address as connection_from, o.batch_id, b.name as batch_name,
      case when o.status = 'queued' then api_timestamp(o.next_attempt_at) end as next_attempt_at,
      api_timestamp(o.created_at) as created_at, api_timestamp(o.updated_at) as updated_at,
      api_timestamp(o.sent_at) as sent_at, o.text_body, o.html_body
    from outbox o
    left join connections c on c.id = o.connection_id
    left join batches b on b.id = o.batch_id
    where o.id = ${id} and o.account_id = ${accountId}`
  return row
}
