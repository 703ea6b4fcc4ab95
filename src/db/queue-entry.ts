import { currentRequestId } from '../log.ts'
import type { RecipientOutcome } from '../smtp/outcome.ts'
import { type Recheck, recheckHolds, recheckJson } from './fast-path.ts'
import { queueRunRequest } from './jobs.ts'
import type { StoredAttachment } from './message-fields.ts'
import { messageColumns } from './outbox-records.ts'
import type { EmailSource, OutboxMessage, Tag } from './outbox-types.ts'
import type { Db } from './sql.ts'
import { suppressedAmong } from './suppressions.ts'

/**
 * Putting mail in the queue: an outbox record in status `queued` and the run of its
 * connection's queue that sends it, written together.
 */

export interface QueuedMessage extends Omit<OutboxMessage, 'connectionId'> {
  text_body?: string | undefined
  html_body?: string | undefined
  /** The batch the message is one recipient of. */
  batchId?: number
  /** Where replies go (a form's submitter, or the caller's addresses, comma-separated). */
  replyTo?: string
  /** The caller's extra header fields. */
  headers?: Record<string, string>
  /** Each attachment's summary, and its bytes in the same order (kept until the email ends). */
  attachments?: StoredAttachment[]
  attachmentContents?: Buffer[]
  /** Its tags ([] when left out). */
  tags?: Tag[]
  /** When it is due (a scheduled send); now when left out. */
  scheduledAt?: Date | undefined
  /**
   * The API request that queued it (null: none), when that is not the one being served: a round
   * runs in the context of whichever of its requests started it (src/fast-path/rounds.ts).
   */
  requestId?: string | null
  /** Outcomes known at acceptance: the recipients left out as suppressed, kept on the record. */
  recipients?: RecipientOutcome[]
  /** Where it came from; when left out, `batch` for a batch's email and `api` for any other. */
  source?: EmailSource
  /**
   * A message submitted as it is to go (SMTP): its size and whether it needs SMTPUTF8; its bytes
   * are stored in the same transaction (storeRawMessage). Without it, the message is composed.
   */
  raw?: { size: number; smtpUtf8: boolean }
  /** Refuse it as `suppressed`, queuing nothing, when a recipient is suppressed for all mail. */
  suppressible?: boolean
}

/** A message put in the queue: its outbox id, and when. */
export interface Queued {
  id: number
  queued_at: Date
}

/**
 * Puts messages for one connection in the queue, due now (or at their scheduled time), and asks
 * for a run of its queue, in one statement whatever their number. Each keeps the id of the API
 * request that queued it (its own, or the one being served), so that the worker logs about it
 * under that id. Returns their outbox ids, in order, and when they were queued.
 */
export async function enqueueMessages(
  db: Db,
  connectionId: number,
  messages: QueuedMessage[],
): Promise<Queued[]> {
  return (await enqueueRechecked(db, connectionId, messages)).map(queuedWithoutRecheck)
}

/** Why enqueueRechecked queued a message not: its recheck no longer holds, or it was asked to look for suppressed recipients and found one. */
export type NotQueued = 'stale' | 'suppressed'

/** What enqueueRechecked answered for a message without a recheck or a look at suppressions: queued. */
export function queuedWithoutRecheck(queued: Queued | NotQueued): Queued {
  if (typeof queued === 'string')
    throw new Error(`a message that asked for no check was refused as ${queued}`)
  return queued
}

/**
 * enqueueMessages for messages that may carry a recheck (see Recheck) or ask to be refused when
 * suppressed (`suppressible`): one whose recheck no longer holds is not queued and answers
 * `stale`; one with a recipient the account suppressed for all mail answers `suppressed`.
 */
export async function enqueueRechecked(
  db: Db,
  connectionId: number,
  messages: (QueuedMessage & { recheck?: Recheck })[],
): Promise<(Queued | NotQueued)[]> {
  if (messages.length === 0) return []
  const served = currentRequestId() ?? null
  const rows = messages.map((m) => ({
    account_id: m.accountId,
    ...messageColumns(m),
    batch_id: m.batchId ?? null,
    reply_to: m.replyTo ?? null,
    headers: m.headers ?? null,
    attachments: m.attachments ?? null,
    tags: m.tags ?? [],
    contents: m.attachmentContents?.map((content) => content.toString('base64')) ?? null,
    request_id: m.requestId === undefined ? served : m.requestId,
    recheck: m.recheck === undefined ? null : recheckJson(m.recheck),
    scheduled_at: m.scheduledAt?.toISOString() ?? null,
    recipients: m.recipients?.length ? m.recipients.map((r) => ({ ...r })) : null,
    source: m.source ?? (m.batchId === undefined ? 'api' : 'batch'),
    raw_size: m.raw?.size ?? null,
    needs_smtputf8: m.raw?.smtpUtf8 ?? false,
    suppressible: m.suppressible ?? false,
  }))
  const holds = recheckHolds(db, db`m.recheck`, db`m.account_id`, db`${connectionId}::int`)
  const envelope = db`m.to_addresses || m.cc_addresses || m.bcc_addresses`
  const answered = await db<
    { id: number | null; queued_at: Date | null; refused_n: number | null; refused: NotQueued | null }[]
  >`
    with asked as materialized (
      select m.*, case when m.recheck is null then true else coalesce(${holds}, false) end as holds,
        m.suppressible and exists (${suppressedAmong(db, db`m.account_id`, envelope)}) as suppressed
      from rows from (jsonb_to_recordset(${db.json(rows)}) as (
             account_id int, from_address text, to_addresses text[], cc_addresses text[], bcc_addresses text[],
             subject text, text_body text, html_body text, message_id text, batch_id int, reply_to text,
             request_id text, recheck jsonb, headers jsonb, attachments jsonb, contents text[], tags jsonb,
             scheduled_at timestamptz, recipients jsonb, source text, raw_size int, needs_smtputf8 boolean,
             suppressible boolean))
           with ordinality as m(account_id, from_address, to_addresses, cc_addresses, bcc_addresses, subject,
                                text_body, html_body, message_id, batch_id, reply_to, request_id, recheck,
                                headers, attachments, contents, tags, scheduled_at, recipients, source,
                                raw_size, needs_smtputf8, suppressible, n)
    ), queued as (
      insert into outbox (account_id, connection_id, status, from_address, to_addresses, cc_addresses,
                          bcc_addresses, subject, text_body, html_body, message_id, batch_id, reply_to,
                          next_attempt_at, request_id, headers, attachments, tags, scheduled_at, recipients,
                          source, raw_size, needs_smtputf8)
      -- A scheduled message is simply not due before its time: the claim leaves it until then.
      select account_id, ${connectionId}::int, 'queued', from_address, to_addresses, cc_addresses,
             bcc_addresses, subject, text_body, html_body, message_id, batch_id, reply_to,
             coalesce(scheduled_at, mailroom_now()), request_id, headers, attachments, tags, scheduled_at,
             recipients, source, raw_size, needs_smtputf8
      from asked where holds and not suppressed
      order by n
      returning id, created_at as queued_at, message_id
    ), stored as (
      insert into outbox_attachment_contents (outbox_id, position, content)
      select q.id, c.position, decode(c.content, 'base64')
      from queued q join asked a on a.message_id = q.message_id,
        unnest(a.contents) with ordinality as c(content, position)
    ), run as (${queueRunRequest(db, connectionId)})
    -- Referring to the run makes it happen; ids follow the messages' order.
    select id, queued_at, null::int as refused_n, null as refused from queued, (select count(*) from run) as requested
    union all
    select null, null, n::int, case when holds then 'suppressed' else 'stale' end
    from asked where not holds or suppressed
    order by id`
  const refused = new Map(answered.flatMap((a) => (a.refused_n === null ? [] : [[a.refused_n, a.refused]])))
  const inOrder = answered.filter((a): a is Queued & { refused_n: null; refused: null } => a.id !== null)
  if (inOrder.length + refused.size !== messages.length) throw new Error('a queued message was not recorded')
  let next = 0
  return messages.map((_, i) => {
    const notQueued = refused.get(i + 1)
    if (notQueued) return notQueued
    const { id, queued_at } = inOrder[next++] as Queued
    return { id, queued_at }
  })
}
