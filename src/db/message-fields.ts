import type { StoredAttachment } from './queue.ts'
import type { Db } from './sql.ts'

/** What a sent email's record keeps of its reply-to addresses, extra headers and attachments. */
export interface MessageFieldsRecord {
  replyTo?: string
  headers?: Record<string, string>
  attachments?: StoredAttachment[]
}

/**
 * Notes them on the record of an email sent at once (POST /send), whose statements take only
 * what every send has: a send without them never comes here. Attachments' bytes are never kept.
 */
export async function recordMessageFields(db: Db, id: number, fields: MessageFieldsRecord): Promise<void> {
  await db`
    update outbox set reply_to = ${fields.replyTo ?? null},
      headers = ${fields.headers === undefined ? null : db.json(fields.headers)},
      attachments = ${fields.attachments === undefined ? null : db.json(fields.attachments)}
    where id = ${id}`
}
