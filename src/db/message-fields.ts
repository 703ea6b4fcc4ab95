import type { StoredAttachment, Tag } from './outbox-types.ts'
import type { Db, Fragment } from './sql.ts'

export type { StoredAttachment }

/** What a sent email's record keeps of its reply-to addresses, extra headers, attachments and tags. */
export interface MessageFieldsRecord {
  replyTo?: string
  headers?: Record<string, string>
  attachments?: StoredAttachment[]
  tags?: Tag[]
}

/**
 * Notes them on the record of an email sent at once (POST /send), whose statements take only
 * what every send has: a send without them never comes here. Attachments' bytes are never kept.
 */
export async function recordMessageFields(db: Db, id: number, fields: MessageFieldsRecord): Promise<void> {
  await db`
    update outbox set reply_to = ${fields.replyTo ?? null},
      headers = ${fields.headers === undefined ? null : db.json(fields.headers)},
      attachments = ${fields.attachments === undefined ? null : db.json(fields.attachments)},
      tags = ${db.json(fields.tags ?? [])}
    where id = ${id}`
}

/** A batch's fields for every one of its emails, the attachments' bytes with them (queue.ts claims them). */
export async function storeBatchFields(
  db: Db,
  batchId: number,
  fields: MessageFieldsRecord & { attachmentContents?: Buffer[] },
): Promise<void> {
  const contents = (fields.attachmentContents ?? []).map((content) => content.toString('base64'))
  await db`
    with fields as (
      insert into batch_fields (batch_id, reply_to, headers, attachments)
      values (${batchId}, ${fields.replyTo ?? null},
        ${fields.headers === undefined ? null : db.json(fields.headers)},
        ${fields.attachments === undefined ? null : db.json(fields.attachments)})
    )
    insert into batch_attachment_contents (batch_id, position, content)
    select ${batchId}, c.position, decode(c.content, 'base64')
    from unnest(${contents}::text[]) with ordinality as c(content, position)`
}

/**
 * A claimed record's reply-to, extra headers and attachments (summaries and bytes): its own, or
 * its batch's, which every email of the batch shares.
 */
export function claimedFields(db: Db): Fragment {
  const batch = (column: string) => batchField(db, db`o`, column)
  return db`
    coalesce(o.reply_to, ${batch('reply_to')}) as reply_to,
    coalesce(o.headers, ${batch('headers')}) as headers,
    coalesce(o.attachments, ${batch('attachments')}) as attachments,
    case when o.attachments is not null
      then array(select a.content from outbox_attachment_contents a where a.outbox_id = o.id order by a.position)
      else array(select b.content from batch_attachment_contents b where b.batch_id = o.batch_id order by b.position)
    end as attachment_contents`
}

/** A column of the fields of record `o`'s batch, which every email of the batch shares. */
function batchField(db: Db, o: Fragment, column: string): Fragment {
  return db`(select f.${db(column)} from batch_fields f where f.batch_id = ${o}.batch_id)`
}

/**
 * Where replies to record `o` go, as an array ([] for none): its own addresses (the caller's,
 * or a form's submitter), else its batch's. Both are kept comma-separated.
 */
export function replyToShown(db: Db, o: Fragment): Fragment {
  const kept = db`coalesce(${o}.reply_to, ${batchField(db, o, 'reply_to')})`
  return db`coalesce(regexp_split_to_array(${kept}, ' *, *'), '{}') as reply_to`
}

/** Record `o`'s reply-to, extra headers and attachments' summaries, its own or its batch's, as it is shown. */
export function fieldsShown(db: Db, o: Fragment): Fragment {
  return db`${replyToShown(db, o)},
    coalesce(${o}.headers, ${batchField(db, o, 'headers')}, '{}') as headers,
    coalesce(${o}.attachments, ${batchField(db, o, 'attachments')}, '[]') as attachments`
}
