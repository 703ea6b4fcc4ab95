import type { z } from 'zod'
import { invalidInput, type ValidationIssue } from '../app-error.ts'
import { cursorOf, idOfCursor } from '../db/ids.ts'
import type {
  HistoryEvent,
  ListedRecord,
  OutboxRecord,
  OutboxStatus,
  StoredAttachment,
  Tag,
} from '../db/outbox-types.ts'
import type { Db } from '../db/sql.ts'
import type { CursorPaginationSchema, EmailEventSchema, EmailSchema } from '../generated/routes.ts'
import type { RecipientOutcome } from '../smtp/outcome.ts'
import { isCalendarDay, listOutbox, outboxRecord } from './outbox-views.ts'
import { tagOfFilter } from './tags.ts'

/**
 * GET /v1/emails and GET /v1/emails/{id}: the outbox as the API shows it, read through the same
 * functions as the dashboard's outbox (outbox-views.ts).
 */

export type Email = z.infer<typeof EmailSchema>
export type EmailEvent = z.infer<typeof EmailEventSchema>
export type CursorPagination = z.infer<typeof CursorPaginationSchema>

/** The query of GET /v1/emails, as its schema let it through. */
export interface EmailQuery {
  status?: OutboxStatus | undefined
  batch_id?: number | undefined
  date_from?: string | undefined
  date_to?: string | undefined
  limit: number
  cursor?: string | undefined
  /** `name:value`, every one to match. */
  tag?: string[] | undefined
}

/** One email of the account with its history; another account's answers OUTBOX_RECORD_NOT_FOUND. */
export async function emailById(db: Db, accountId: number, id: number): Promise<Email> {
  const record = await outboxRecord(db, accountId, id)
  return {
    ...asEmail(record),
    headers: record.headers,
    attachments: record.attachments.map(asAttachment),
    history: record.history.map(asEvent),
  }
}

/** A page of the account's emails, newest first, filtered as asked. */
export async function listEmails(
  db: Db,
  accountId: number,
  query: EmailQuery,
): Promise<{ emails: Email[]; pagination: CursorPagination }> {
  const { before, tags } = checkQuery(query)
  const page = await listOutbox(
    db,
    accountId,
    { status: query.status, batchId: query.batch_id, from: query.date_from, to: query.date_to, tags },
    { before, size: query.limit },
  )
  return {
    emails: page.records.map(asEmail),
    pagination: {
      limit: query.limit,
      hasMore: page.older !== undefined,
      nextCursor: page.older === undefined ? null : cursorOf(page.older),
    },
  }
}

/**
 * What the schema cannot check: real days in order, and a cursor this API gave. Returns its ID,
 * and the tags asked for.
 */
function checkQuery(query: EmailQuery): { before: number | undefined; tags: Tag[] } {
  const issues: ValidationIssue[] = []
  const tags = (query.tag ?? []).flatMap((text, index) => {
    const tag = tagOfFilter(text)
    if (tag) return [tag]
    issues.push({ path: ['tag', index], message: 'Not a tag as name:value', code: 'invalid_format' })
    return []
  })
  for (const name of ['date_from', 'date_to'] as const) {
    const day = query[name]
    if (day !== undefined && !isCalendarDay(day)) {
      issues.push({ path: [name], message: 'Not a calendar date (YYYY-MM-DD)', code: 'invalid_format' })
    }
  }
  if (issues.length === 0 && query.date_from && query.date_to && query.date_from > query.date_to) {
    issues.push({ path: ['date_from'], message: 'date_from is after date_to', code: 'custom' })
  }
  const before = query.cursor === undefined ? undefined : idOfCursor(query.cursor)
  if (before === null) {
    issues.push({ path: ['cursor'], message: 'Not a cursor this API gave', code: 'custom' })
  }
  if (issues.length > 0) throw invalidInput(issues)
  return { before: before ?? undefined, tags }
}

function asEmail(record: ListedRecord): Email {
  return {
    id: record.id,
    status: record.status,
    from: record.from,
    to: record.to,
    cc: record.cc,
    bcc: record.bcc,
    subject: record.subject,
    connection_id: record.connection_id,
    batch_id: record.batch_id,
    source: record.source,
    message_id: record.message_id,
    attempts: record.attempts,
    last_error: record.error,
    recipients: withPending(record),
    created_at: record.created_at,
    updated_at: record.updated_at,
    sent_at: record.sent_at,
    next_attempt_at: record.next_attempt_at,
    scheduled_at: record.scheduled_at,
    tags: record.tags,
    reply_to: record.reply_to,
  }
}

/** Every field in every attachment's summary: `content_id` null for a file that is not inline. */
function asAttachment(attachment: StoredAttachment): NonNullable<Email['attachments']>[number] {
  return { ...attachment, content_id: attachment.content_id ?? null }
}

/**
 * Every recipient's outcome; before the first attempt, those still to be tried first (a recipient
 * left out as suppressed has its outcome from the start).
 */
function withPending(record: OutboxRecord): Email['recipients'] {
  const known = record.recipients?.map(asOutcome) ?? []
  const settled = new Set(known.map((r) => r.email.toLowerCase()))
  const pending = [...record.to, ...record.cc, ...record.bcc]
    .filter((email) => !settled.has(email.toLowerCase()))
    .map((email) => ({ email, status: 'pending' as const, reply: null }))
  return [...pending, ...known]
}

function asOutcome(outcome: RecipientOutcome): Email['recipients'][number] {
  return { email: outcome.address, status: outcome.status, reply: outcome.reply }
}

function asEvent(event: HistoryEvent): EmailEvent {
  if ('recipients' in event) return { ...event, recipients: event.recipients.map(asOutcome) }
  return event
}
