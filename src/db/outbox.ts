import { currentRequestId } from '../log.ts'
import type { Plan } from '../plans.ts'
import type { RecipientOutcome } from '../smtp/outcome.ts'
import { type MemberLinkSigning, memberLink, type Payload } from './audiences.ts'
import { clearFailures, heldUntil, mayGoNow } from './connections.ts'
import { dueInMs, expansionRunRequest, queueRunComing, queueRunRequest } from './jobs.ts'
import type { Db, Fragment } from './sql.ts'
import {
  type LimitRefusal,
  type Limits,
  takeUnitsCall,
  type UnitsRow,
  type UnitsWhere,
  unitsOf,
} from './usage.ts'
import { type Vouch, vouchHolds, vouchJson } from './vouch.ts'
import { batchEndEvent, emailEventData, emailEventType, eventsRecorded, recordedEvents } from './webhooks.ts'
import { type OwnClaims, orphanedClaim } from './worker-processes.ts'

/**
 * The outbox (table outbox): every attempted send, whatever its path, and the queue, which is
 * the outbox records in status `queued`. Every statement on the table is here.
 */

export type OutboxStatus = 'queued' | 'sending' | 'sent' | 'failed'

export interface OutboxRecord {
  id: number
  account_id: number
  connection_id: number | null
  status: OutboxStatus
  from: string
  to: string[]
  cc: string[]
  bcc: string[]
  subject: string
  message_id: string
  error: string | null
  /** What became of each recipient so far; null before the first attempt. */
  recipients: RecipientOutcome[] | null
  attempts: number
  /** When a queued message is tried next (UTC, API shape); null unless queued. */
  next_attempt_at: string | null
  created_at: string
  updated_at: string
  sent_at: string | null
}

/** A batch's content as stored once: subject and bodies with their placeholders unrendered. */
export interface BatchContent {
  subject: string
  text_body: string | null
  html_body: string | null
}

/**
 * A record as stored: a batch recipient's record has no subject or bodies of its own but its
 * batch's `content` (only the fields the reader asked for) and its `payload`, rendered by the
 * reader; any other record has its own, and `content` null.
 */
export type StoredRecord<T extends { subject: string }> = Omit<T, 'subject'> & {
  subject: string | null
  content: (Partial<BatchContent> & { subject: string }) | null
  payload: Payload
}

/** An attempt in flight longer than this is taken for dead (well beyond every SMTP timeout). */
export const ATTEMPT_LEASE_SECONDS = 300

const COLUMNS = (db: Db) => db`
  id, account_id, connection_id, status, from_address as "from", to_addresses as "to",
  cc_addresses as cc, bcc_addresses as bcc, subject, message_id, error, recipients, attempts,
  case when status = 'queued' then api_timestamp(next_attempt_at) end as next_attempt_at,
  api_timestamp(created_at) as created_at, api_timestamp(updated_at) as updated_at,
  api_timestamp(sent_at) as sent_at`

/** What every outbox record says of its message, whatever path sends it. */
export interface OutboxMessage {
  accountId: number
  connectionId: number
  from: string
  to: string[]
  cc: string[]
  bcc: string[]
  subject: string
  messageId: string
}

/** Where a send's units were taken, so that a give-back returns them to the same windows. */
export type Reservation = UnitsWhere

/** The bodies of a message, kept with its record. */
export interface MessageBodies {
  text_body?: string | undefined
  html_body?: string | undefined
}

/** A message as the outbox's columns name it, for a statement to read from JSON. */
export function messageColumns(m: Omit<OutboxMessage, 'accountId' | 'connectionId'> & MessageBodies) {
  return {
    from_address: m.from,
    to_addresses: m.to,
    cc_addresses: m.cc,
    bcc_addresses: m.bcc,
    subject: m.subject,
    text_body: m.text_body ?? null,
    html_body: m.html_body ?? null,
    message_id: m.messageId,
  }
}

/** How an attempt went, as its line in the record's history says it. */
export type AttemptKind = 'delivered' | 'refused' | 'deferred' | 'pushback' | 'unreachable'

export interface AttemptLine {
  /** The record's attempt number. */
  attempt: number
  kind: AttemptKind
  /** The server's reply to the message, or the reason it went no further. */
  reply: string | null
  recipients: RecipientOutcome[]
}

/** What becomes of the record after an attempt. */
export type Settlement =
  /**
   * Ended: `releaseKey` frees a /send's idempotency key (its caller may retry under it);
   * `counter` counts the attempt's transient failure or deferral, as for a retry.
   */
  | { status: 'sent' | 'failed'; error: string | null; releaseKey?: boolean; counter?: RetryCounter }
  /**
   * Queued again, due after `delayMs`; the failure or deferral counted toward the retry schedule
   * (none when the attempt only met an outage of the connection already known).
   */
  | { status: 'queued'; error: string; delayMs: number; counter?: RetryCounter }

export type RetryCounter = 'failures' | 'deferrals'

/** An attempt to settle: its record, its line in the history, every recipient's outcome so far, and what becomes of the record. */
export interface AttemptSettlement {
  id: number
  line: AttemptLine
  recipients: RecipientOutcome[]
  settlement: Settlement
}

/**
 * Settles attempts of one connection in one statement: each record's new state with every
 * recipient's outcome so far, the attempt's line in its history, their webhook events (a batch's
 * end among them), and (when a server took a message) the end of the connection's failure
 * streak. A first delivery stamps `sent_at`, even when some recipients are still to be tried.
 */
export async function settleAttempts(
  db: Db,
  connectionId: number,
  attempts: AttemptSettlement[],
): Promise<void> {
  const rows = attempts.map(({ id, line, recipients, settlement }) => ({
    settle_id: id,
    settle_status: settlement.status,
    settle_error: settlement.error,
    settle_delay_ms: settlement.status === 'queued' ? settlement.delayMs : null,
    settle_release_key: settlement.status !== 'queued' && settlement.releaseKey === true,
    settle_failures: settlement.counter === 'failures' ? 1 : 0,
    settle_deferrals: settlement.counter === 'deferrals' ? 1 : 0,
    settle_delivered: line.kind === 'delivered' || line.recipients.some((r) => r.status === 'accepted'),
    settle_recipients: jsonOf(recipients),
    settle_attempt: line.attempt,
    settle_kind: line.kind,
    settle_reply: line.reply,
    settle_line: jsonOf(line.recipients),
  }))
  const delivered = rows.some((r) => r.settle_delivered)
  await db`
    with settlement as (
      select * from jsonb_to_recordset(${db.json(rows)}) as s(settle_id int, settle_status text, settle_error text,
        settle_delay_ms float8, settle_release_key bool, settle_failures int, settle_deferrals int,
        settle_delivered bool, settle_recipients jsonb, settle_attempt int, settle_kind text, settle_reply text,
        settle_line jsonb)
    ), record as (
      update outbox set
        status = case when settle_status <> 'queued' then settle_status
                      when connection_id is null then 'failed' else 'queued' end,
        error = case when settle_status = 'queued' and connection_id is null then ${CONNECTION_DELETED}
                     else settle_error end,
        next_attempt_at = case when settle_status = 'queued'
                               then mailroom_now() + settle_delay_ms * interval '1 millisecond' end,
        lease_expires_at = case when settle_status = 'queued' then lease_expires_at end,
        idempotency_key_sha256 = case when settle_release_key then null else idempotency_key_sha256 end,
        recipients = settle_recipients, claimed_by = null,
        failures = failures + settle_failures, deferrals = deferrals + settle_deferrals,
        sent_at = case when settle_delivered then coalesce(sent_at, now()) else sent_at end, updated_at = now()
      -- The ids again as an array: the planner cannot count the recordset's rows, and taking it
      -- for a hundred would scan the whole outbox while it is small and growing. An array the
      -- statement makes, not a parameter, so that one generic plan serves every execution
      -- (planning this statement each time cost more than running it).
      from settlement where id = settle_id and id = any(array(select settle_id from settlement))
      returning ${EVENT_COLUMNS(db)}
    ), history as (
      insert into outbox_attempts (outbox_id, attempt, outcome, reply, recipients)
      select settle_id, settle_attempt, settle_kind, settle_reply, settle_line from settlement
    ), ${delivered ? db`cleared as (${clearFailures(db, connectionId)}),` : db``}
    settled_batches as (
      select batch_id, array_agg(id) as ids, array_agg(status) as statuses from record
      where batch_id is not null and status in ('sent', 'failed') group by batch_id
    ),
    ${recordedEvents(db, db`${emailEvents(db)} union all ${batchEndEvent(db)}`)}
    select ${eventsRecorded(db)}`
}

/** What an email event reads of a record (see emailEventData). */
const EVENT_COLUMNS = (db: Db) => db`
  id, account_id, batch_id, status, message_id, from_address, to_addresses, cc_addresses, bcc_addresses,
  subject, content_id, payload, attempts, error, recipients, next_attempt_at`

/** The email events of the records the statement's `record` changed: email.sent, .failed or .deferred. */
function emailEvents(db: Db): Fragment {
  return db`select r.account_id, ${emailEventType(db)} as type, ${emailEventData(db)} as data from record r`
}

/** postgres.js's json() wants its own JSON type; outcomes are plain data. */
function jsonOf(recipients: RecipientOutcome[]) {
  return recipients.map((r) => ({ address: r.address, status: r.status, reply: r.reply }))
}

export type AttemptRecord = OutboxRecord & { in_flight: boolean }

/** The attempt an idempotency key points at, and whether its lease ran out while in flight. */
export type KeyedAttempt = AttemptRecord & { lease_over: boolean }

/**
 * The attempt `key` points at in the account (a KeyedAttempt), as a query to run or to nest in
 * another; both are values, or columns of a row in scope there.
 */
export function attemptOfKey(db: Db, accountId: Fragment, key: Fragment): Fragment {
  return db`
    select ${COLUMNS(db)}, status = 'sending' as in_flight, lease_expires_at <= now() as lease_over
    from outbox where account_id = ${accountId} and idempotency_key_sha256 = ${key}`
}

export async function attemptByKey(
  db: Db,
  accountId: number,
  key: Buffer,
): Promise<KeyedAttempt | undefined> {
  const [row] = await db<KeyedAttempt[]>`${attemptOfKey(db, db`${accountId}::int`, db`${key}::bytea`)}`
  return row
}

/** Settles an attempt still in flight as failed; undefined when another request settled it first. */
export async function settleInterrupted(
  db: Db,
  id: number,
  error: string,
): Promise<AttemptRecord | undefined> {
  const [row] = await db<AttemptRecord[]>`
    update outbox set status = 'failed', lease_expires_at = null, updated_at = now(), error = ${error}
    where id = ${id} and status = 'sending'
    returning ${COLUMNS(db)}, false as in_flight`
  return row
}

/** The subject of a listed record's batch content, when it has one (a list leaves the bodies out). */
const CONTENT_SUBJECT = (db: Db) => db`
  (select json_build_object('subject', c.subject) from batch_contents c where c.id = outbox.content_id) as content`

export function selectOutbox(
  db: Db,
  accountId: number,
  limit: number,
): Promise<StoredRecord<OutboxRecord>[]> {
  return db<StoredRecord<OutboxRecord>[]>`
    select ${COLUMNS(db)}, ${CONTENT_SUBJECT(db)}, payload
    from outbox where account_id = ${accountId} order by id desc limit ${limit}`
}

// ---------------------------------------------------------------- The queue

export interface QueuedMessage extends Omit<OutboxMessage, 'connectionId'> {
  text_body?: string | undefined
  html_body?: string | undefined
  /** The batch the message is one recipient of. */
  batchId?: number
  /** Where replies go (a form's submitter). */
  replyTo?: string
  /**
   * The API request that queued it (null: none), when that is not the one being served: a round
   * runs in the context of whichever of its requests started it (src/db/rounds.ts).
   */
  requestId?: string | null
}

/** A message put in the queue: its outbox id, and when. */
export interface Queued {
  id: number
  queued_at: Date
}

/**
 * Puts messages for one connection in the queue, due now, and asks for a run of its queue, in
 * one statement whatever their number. Each keeps the id of the API request that queued it
 * (its own, or the one being served), so that the worker logs about it under that id. Returns
 * their outbox ids, in order, and when they were queued.
 */
export async function enqueueMessages(
  db: Db,
  connectionId: number,
  messages: QueuedMessage[],
): Promise<Queued[]> {
  return (await enqueueVouched(db, connectionId, messages)).map(unvouchedQueued)
}

/** What enqueueVouched answered for a message without a vouch: queued, never stale. */
export function unvouchedQueued(queued: Queued | 'stale'): Queued {
  if (queued === 'stale') throw new Error('a message without a vouch was refused as stale')
  return queued
}

/**
 * enqueueMessages for messages that may carry a vouch (see Vouch): one whose vouch no longer
 * holds is not queued, and answers `stale`.
 */
export async function enqueueVouched(
  db: Db,
  connectionId: number,
  messages: (QueuedMessage & { vouch?: Vouch })[],
): Promise<(Queued | 'stale')[]> {
  if (messages.length === 0) return []
  const served = currentRequestId() ?? null
  const rows = messages.map((m) => ({
    account_id: m.accountId,
    ...messageColumns(m),
    batch_id: m.batchId ?? null,
    reply_to: m.replyTo ?? null,
    request_id: m.requestId === undefined ? served : m.requestId,
    vouch: m.vouch === undefined ? null : vouchJson(m.vouch),
  }))
  const holds = vouchHolds(db, db`m.vouch`, db`m.account_id`, db`${connectionId}::int`)
  const answered = await db<{ id: number | null; queued_at: Date | null; stale: number | null }[]>`
    with asked as materialized (
      select m.*, case when m.vouch is null then true else coalesce(${holds}, false) end as holds
      from rows from (jsonb_to_recordset(${db.json(rows)}) as (
             account_id int, from_address text, to_addresses text[], cc_addresses text[], bcc_addresses text[],
             subject text, text_body text, html_body text, message_id text, batch_id int, reply_to text,
             request_id text, vouch jsonb))
           with ordinality as m(account_id, from_address, to_addresses, cc_addresses, bcc_addresses, subject,
                                text_body, html_body, message_id, batch_id, reply_to, request_id, vouch, n)
    ), queued as (
      insert into outbox (account_id, connection_id, status, from_address, to_addresses, cc_addresses,
                          bcc_addresses, subject, text_body, html_body, message_id, batch_id, reply_to,
                          next_attempt_at, request_id)
      select account_id, ${connectionId}::int, 'queued', from_address, to_addresses, cc_addresses,
             bcc_addresses, subject, text_body, html_body, message_id, batch_id, reply_to,
             mailroom_now(), request_id
      from asked where holds
      order by n
      returning id, created_at as queued_at
    ), run as (${queueRunRequest(db, connectionId)})
    -- Referring to the run makes it happen; ids follow the messages' order.
    select id, queued_at, null::int as stale from queued, (select count(*) from run) as requested
    union all
    select null, null, n::int from asked where not holds
    order by id`
  const stale = new Set(answered.flatMap((a) => (a.stale === null ? [] : [a.stale])))
  const inOrder = answered.filter((a): a is Queued & { stale: null } => a.id !== null)
  if (inOrder.length + stale.size !== messages.length) throw new Error('a queued message was not recorded')
  let next = 0
  return messages.map((_, i) => {
    if (stale.has(i + 1)) return 'stale'
    const { id, queued_at } = inOrder[next++] as Queued
    return { id, queued_at }
  })
}

/** A batch whose recipients are moved from their store into the outbox (see moveBatchRecipients). */
export interface ExpandingBatch {
  id: number
  accountId: number
  /** Null once the connection was deleted: the recipients then go in as failed. */
  connectionId: number | null
  from: string
  contentId: number
  /** The API request that created the batch. */
  requestId: string | null
}

/**
 * Moves up to `limit` of the batch's next recipients, in their order, from their store into the
 * outbox in one statement, from the first block of the store: taken off it, inserted here, so
 * that a crash at any moment neither loses nor duplicates one. Each record holds its recipient
 * and payload (the content is the batch's, rendered when sent), with the member's unsubscribe link
 * signed with `links` (in the payload as `unsubscribe_url`, reserved: it wins over a payload's
 * own), under a new Message-ID in the sender's domain, as newMessageId makes them. Queued, with a
 * run of the connection's queue asked for; or, when the connection was deleted, failed as the
 * mail queued on it was, with their email.failed events. Returns whether any are left.
 */
export async function moveBatchRecipients(
  tx: Db,
  batch: ExpandingBatch,
  links: MemberLinkSigning | null,
  limit: number,
): Promise<boolean> {
  const domain = batch.from.slice(batch.from.lastIndexOf('@') + 1)
  const gone = batch.connectionId === null
  // The queue's run, or the webhook deliveries' of the events; referring to it makes it happen.
  const [runs, requested] =
    batch.connectionId === null
      ? [recordedEvents(tx, emailEvents(tx)), eventsRecorded(tx)]
      : [tx`run as (${queueRunRequest(tx, batch.connectionId)})`, tx`(select count(*) from run)`]
  const link = links ? memberLink(tx, links, tx`taken.member_id`) : tx`null::text`
  const [row] = await tx<{ left: boolean }[]>`
    with block as (
      select block, recipients, jsonb_array_length(recipients) > ${limit} as split
      from batch_recipients where batch_id = ${batch.id} order by block limit 1
    ), taken as (
      -- A member without payload was stored with a JSON null.
      select r.value ->> 0 as email, nullif(r.value -> 1, 'null') as payload, (r.value ->> 2)::int as member_id, r.n
      from block, jsonb_array_elements(block.recipients) with ordinality as r(value, n)
      where r.n <= ${limit}
    ), rest as (
      update batch_recipients s set recipients = jsonb_path_query_array(s.recipients, ${`$[${limit} to last]`}::jsonpath)
      from block where s.batch_id = ${batch.id} and s.block = block.block and block.split
    ), emptied as (
      delete from batch_recipients s
      using block where s.batch_id = ${batch.id} and s.block = block.block and not block.split
    ), record as (
      insert into outbox (account_id, connection_id, status, error, from_address, to_addresses, content_id, payload,
                          message_id, batch_id, unsubscribe_url, next_attempt_at, request_id)
      select ${batch.accountId}::int, ${batch.connectionId}::int, ${gone ? 'failed' : 'queued'}::text,
             ${gone ? CONNECTION_DELETED : null}::text, ${batch.from}::text, array[t.email], ${batch.contentId}::int,
             ${links ? tx`coalesce(t.payload, '{}') || jsonb_build_object('unsubscribe_url', t.url)` : tx`t.payload`},
             '<' || gen_random_uuid() || '@' || ${domain}::text || '>', ${batch.id}::int,
             t.url, ${gone ? tx`null` : tx`mailroom_now()`}, ${batch.requestId}::text
      from (select taken.*, ${link} as url from taken) t
      order by t.n
      returning ${EVENT_COLUMNS(tx)}
    ), ${runs}
    select coalesce((select split from block), false)
        or exists (select 1 from batch_recipients s, block
                   where s.batch_id = ${batch.id} and s.block > block.block) as left,
      ${requested} as requested`
  return row?.left ?? false
}

/** A claimed message and what its retry schedule needs. */
export interface ClaimedMessage {
  id: number
  /** This attempt's number. */
  attempts: number
  failures: number
  deferrals: number
  /** How long the message has been in the queue (mailroom_now() time). */
  age_ms: number
  /** Every recipient's outcome so far; null before the first attempt. */
  recipients: RecipientOutcome[] | null
  message_id: string
  to_addresses: string[]
  cc_addresses: string[]
  bcc_addresses: string[]
  /** Null for a batch recipient's record: its message is rendered from `content_id` and `payload`. */
  subject: string | null
  text_body: string | null
  html_body: string | null
  content_id: number | null
  payload: Payload
  /** The API request that queued it (X-Request-Id), if any. */
  request_id: string | null
  reply_to: string | null
  unsubscribe_url: string | null
  /** Where its units are counted, for a give-back. */
  usage_day: string | null
  quota_window: Date | null
}

/** What one claim got: messages, a limit that allows none now, or nothing due. */
export type Claim = { claimed: ClaimedMessage[] } | LimitRefusal | 'none'

/**
 * Claims up to `limit` of the connection's due messages, oldest first, for `processId`, with
 * their units of every limit (`limits`: mailroom_take_units), in one statement: as many as are
 * due and the limits allow. Those another sender holds are skipped, and none is due while the
 * connection is disabled, paused or backing off. A limit that allows none leaves them untouched
 * and is the answer; those a limit leaves over stay queued as if never looked at. Each claimed
 * notes the day and quota window its units were taken in, for a give-back.
 */
export async function claimDue(
  db: Db,
  connectionId: number,
  processId: string,
  limit: number,
  limits: Limits,
): Promise<Claim> {
  const rows = await db<(UnitsRow & ({ id: null } | (ClaimedMessage & { next_attempt_at: Date })))[]>`
    with due as materialized (
      select o.id, o.next_attempt_at from outbox o join connections c on c.id = o.connection_id
      where o.connection_id = ${connectionId} and o.status = 'queued' and o.next_attempt_at <= mailroom_now()
        and ${mayGoNow(db)}
      order by o.next_attempt_at, o.id
      limit ${limit}
      for update of o skip locked
    ), units as materialized (
      -- Only when something is due: the filter is applied before the call.
      select u.* from (select count(*)::int as n from due) d, ${takeUnitsCall(db, limits, db`d.n`)} u
      where d.n > 0
    ), claimed as (
      update outbox o set status = 'sending', claimed_by = ${processId}, attempts = o.attempts + 1,
        usage_day = u.usage_day, quota_window = u.quota_window, updated_at = now()
      from (select id from due order by next_attempt_at, id limit (select granted from units)) chosen, units u
      where o.id = chosen.id and u.refused is null
      returning o.id, o.attempts, o.failures, o.deferrals,
        extract(epoch from mailroom_now() - o.created_at)::float8 * 1000 as age_ms, o.recipients,
        o.message_id, o.to_addresses, o.cc_addresses, o.bcc_addresses, o.subject, o.text_body, o.html_body,
        o.content_id, o.payload, o.request_id, o.reply_to, o.unsubscribe_url, o.usage_day::text, o.quota_window,
        o.next_attempt_at
    )
    select c.*, u.granted, u.refused, u.used, u.wait_ms, u.resets_at
    from units u left join claimed c on true
    order by c.next_attempt_at, c.id`
  const [first] = rows
  if (first === undefined) return 'none'
  const units = unitsOf(first)
  if ('refused' in units) return units
  const claimed = rows.flatMap((row) => {
    if (row.id === null) return []
    const { granted, refused, used, wait_ms, resets_at, next_attempt_at, ...message } = row
    return [message]
  })
  return claimed.length > 0 ? { claimed } : 'none'
}

/** Puts back claimed messages that will not be sent now, as if never claimed (their units are the caller's). */
export async function unclaim(db: Db, ids: number[]): Promise<void> {
  await db`
    update outbox set status = 'queued', claimed_by = null, attempts = attempts - 1, usage_day = null,
      quota_window = null
    where id = any(${ids}::int[])`
}

/** Said of mail whose connection was deleted while it waited (the rulings' wording). */
const CONNECTION_DELETED = 'connection deleted'

/**
 * Back to `queued` with `error` as the last error; but mail whose connection was deleted
 * meanwhile fails instead, since nothing would ever send it.
 */
function backToQueue(db: Db, error: string) {
  return db`
    status = case when connection_id is null then 'failed' else 'queued' end,
    error = case when connection_id is null then ${CONNECTION_DELETED} else ${error} end`
}

/**
 * A deleted connection fails the mail still waiting on it, with its email.failed events and the
 * ends of the batches it was the rest of; run in the deleting transaction. Its batches' recipients
 * not yet in the outbox are failed the same way by their expansion, asked for here. The batches
 * are locked first, as an expansion locks its batch before it queues on the connection: a chunk
 * being moved now is committed before the queued mail is failed, and a later one finds the
 * connection gone.
 */
export async function failQueuedOfConnection(tx: Db, connectionId: number): Promise<void> {
  await tx`
    with locked as (
      select b.id from batches b where b.connection_id = ${connectionId} order by b.id for update
    ), run as (${expansionRunRequest(
      tx,
      tx`select l.id as batch_id from locked l where exists (select 1 from batch_recipients r where r.batch_id = l.id)`,
    )})
    select count(*) from run`
  await failQueued(tx, connectionId, tx`${CONNECTION_DELETED}`, tx`true`)
}

/**
 * Ends the connection's mail queued `maxAgeMs` ago or earlier, failed with its last error (or
 * `reason`), as an attempt past the queue lifetime would end it: mail waiting behind a server
 * out of reach is not tried, and would otherwise wait for as long as the outage lasts.
 */
export async function failExpiredQueued(
  tx: Db,
  connectionId: number,
  maxAgeMs: number,
  reason: string,
): Promise<void> {
  await failQueued(
    tx,
    connectionId,
    tx`'Still deferred after ' || round(extract(epoch from mailroom_now() - created_at) / 3600) || ' hours: '
       || coalesce(error, ${reason})`,
    tx`created_at <= mailroom_now() - ${maxAgeMs} * interval '1 millisecond'`,
  )
}

/** Fails the connection's queued mail that `only` picks, with `error`, its events and the ends of its batches. */
async function failQueued(tx: Db, connectionId: number, error: Fragment, only: Fragment): Promise<void> {
  const batches = await tx<{ batch_id: number }[]>`
    with record as (
      update outbox set status = 'failed', error = ${error}, next_attempt_at = null, updated_at = now()
      where connection_id = ${connectionId} and status = 'queued' and ${only}
      returning ${EVENT_COLUMNS(tx)}
    ), ${recordedEvents(tx, emailEvents(tx))}
    select distinct r.batch_id from record r where r.batch_id is not null and ${eventsRecorded(tx)} >= 0`
  await recordBatchEnds(
    tx,
    batches.map((b) => b.batch_id),
  )
}

/** The end events of `batchIds` that have ended, by the caller's earlier statements (see mailroom_batch_end_event). */
export async function recordBatchEnds(tx: Db, batchIds: number[]): Promise<void> {
  if (batchIds.length === 0) return
  await tx`
    with settled_batches as (
      select unnest(${batchIds}::int[]) as batch_id, null::int[] as ids, null::text[] as statuses
    ), ${recordedEvents(tx, batchEndEvent(tx))}
    select ${eventsRecorded(tx)}`
}

/**
 * The connection's queued mail is due now, whatever back-off each message was waiting out: a
 * pause that ends lets all of it go (pacing and the other limits still meter it).
 */
export async function queuedDueNow(db: Db, connectionId: number): Promise<void> {
  await db`
    update outbox set next_attempt_at = mailroom_now()
    where connection_id = ${connectionId} and status = 'queued' and next_attempt_at > mailroom_now()`
}

/** What decides when the connection's queue runs next. */
export interface QueueState {
  disabled: boolean
  /**
   * Until a pause, a push-back back-off or a wait for the server ends; null when none; Infinity
   * when paused until resumed.
   */
  heldForMs: number | null
  /** Until the earliest queued message is due (0: due now); null when nothing is queued. */
  nextDueInMs: number | null
}

/** The connection's queue state, or undefined when the connection no longer exists. */
export async function queueState(db: Db, connectionId: number): Promise<QueueState | undefined> {
  const [row] = await db<{ disabled: boolean; held_for_ms: number | null; next_due_in_ms: number | null }[]>`
    select c.disabled,
      case when c.paused_until = 'infinity' then 'infinity'::float8
           when ${heldUntil(db)} > mailroom_now()
             then ceil(extract(epoch from ${heldUntil(db)} - mailroom_now()) * 1000)::float8 end as held_for_ms,
      (select ceil(extract(epoch from min(next_attempt_at) - mailroom_now()) * 1000)::float8
       from outbox where connection_id = c.id and status = 'queued') as next_due_in_ms
    from connections c where c.id = ${connectionId}`
  if (!row) return undefined
  return { disabled: row.disabled, heldForMs: row.held_for_ms, nextDueInMs: dueInMs(row.next_due_in_ms) }
}

/**
 * Connections whose due mail has waited `graceMs` past its time with no queue run that will
 * run, though nothing holds the connection back: a safety net for whatever lost its run.
 */
export async function connectionsWithStrandedMail(db: Db, graceMs: number): Promise<number[]> {
  const rows = await db<{ connection_id: number }[]>`
    select distinct o.connection_id from outbox o join connections c on c.id = o.connection_id
    where o.status = 'queued' and o.next_attempt_at <= mailroom_now() - ${graceMs} * interval '1 millisecond'
      and ${mayGoNow(db)} and not ${queueRunComing(db, db`o.connection_id`)}`
  return rows.map((r) => r.connection_id)
}

const INTERRUPTED_CLAIM = 'The worker sending it stopped before the SMTP server answered; it is sent again'

/**
 * Queues again the messages held by worker processes that are gone, or held longer than any
 * SMTP attempt lasts, and those claimed in the sweeping process's name that it does not hold
 * (older than `graceMs`): it lost track of them, say when the database went away mid-claim.
 * Their outcome is unknown, so they are sent again with the same Message-ID. Returns the
 * connections whose queues need a run.
 */
export async function releaseOrphanedClaims(tx: Db, own: OwnClaims, graceMs: number): Promise<number[]> {
  const rows = await tx<{ connection_id: number | null }[]>`
    update outbox set
      ${backToQueue(tx, INTERRUPTED_CLAIM)},
      next_attempt_at = mailroom_now(), claimed_by = null, updated_at = now()
    where ${orphanedClaim(tx, 'updated_at', ATTEMPT_LEASE_SECONDS, own, graceMs)}
    returning connection_id`
  return [...new Set(rows.flatMap((r) => (r.connection_id === null ? [] : [r.connection_id])))]
}

// ---------------------------------------------------------------- Batches' records

/** What a batch's recipients' records say of it. */
export interface BatchProgress {
  sent_count: number
  failed_count: number
  /** A worker has taken at least one of its messages. */
  started: boolean
  last_change: Date | null
}

/** A lateral subquery over the records of batch `b` (the row alias of the batches table). */
export function batchProgress(db: Db) {
  return db`
    select count(*) filter (where status = 'sent')::int as sent_count,
           count(*) filter (where status = 'failed')::int as failed_count,
           coalesce(bool_or(status <> 'queued' or attempts > 0), false) as started,
           max(updated_at) as last_change
    from outbox where batch_id = b.id`
}

export interface FailedRecipient {
  outbox_id: number
  email: string
  error: string | null
  attempts: number
  updated_at: string
}

/** A batch's failed recipients in the order they were queued; a page of them (after `after`) when asked. */
export function failedRecipients(
  db: Db,
  batchId: number,
  page: { after?: number | undefined; limit?: number } = {},
): Promise<FailedRecipient[]> {
  return db<FailedRecipient[]>`
    select id as outbox_id, to_addresses[1] as email, error, attempts, api_timestamp(updated_at) as updated_at
    from outbox
    where batch_id = ${batchId} and status = 'failed' ${page.after === undefined ? db`` : db`and id > ${page.after}`}
    order by id
    ${page.limit === undefined ? db`` : db`limit ${page.limit}`}`
}

/** Who queued failed mail again: the account's owner on the dashboard, or the operator command. */
export type RetriedBy = 'dashboard' | 'operator'

/**
 * Queues a batch's failed recipients again (their counts and outcomes reset: each record is one
 * recipient), through their connection or, when theirs was deleted, `fallbackConnectionId`, and
 * keeps in each record's history who retried it and the failure it undid. Returns the
 * connection of each.
 */
export async function requeueFailedOfBatch(
  tx: Db,
  batchId: number,
  fallbackConnectionId: number | null,
  by: RetriedBy,
): Promise<(number | null)[]> {
  const rows = await tx<{ connection_id: number | null }[]>`
    with failed as (
      select id, error, updated_at from outbox where batch_id = ${batchId} and status = 'failed' for update
    ), requeued as (
      update outbox o set status = 'queued', error = null, failures = 0, deferrals = 0, recipients = null,
        connection_id = coalesce(o.connection_id, ${fallbackConnectionId}::int), next_attempt_at = mailroom_now(),
        updated_at = now()
      from failed where o.id = failed.id
      returning o.id, o.connection_id
    ), noted as (
      insert into outbox_retries (outbox_id, retried_by, failed_at, error)
      select id, ${by}::text, updated_at, error from failed
    )
    select connection_id from requeued`
  return rows.map((r) => r.connection_id)
}

/** Sent and failed records past their plan's retention, except those of a batch that still exists. */
export async function purgeOutbox(db: Db, retentionDays: Record<Plan, number>): Promise<number> {
  const gone = await db`
    delete from outbox o using accounts a
    where a.id = o.account_id and o.status in ('sent', 'failed') and o.batch_id is null
      and o.created_at < now() - make_interval(days => (${db.json(retentionDays)}::jsonb ->> a.plan)::int)`
  return gone.count
}

/**
 * Mail waiting on the account's connection, its batches' recipients not yet in the outbox
 * included: what deleting it would fail.
 */
export async function queuedOnConnection(db: Db, accountId: number, connectionId: number): Promise<number> {
  const [row] = await db<{ queued: number }[]>`
    select ((select count(*) from outbox
             where account_id = ${accountId} and connection_id = ${connectionId} and status = 'queued')
          + (select coalesce(sum(${storedRecipients(db, db`b.id`)}), 0) from batches b
             where b.account_id = ${accountId} and b.connection_id = ${connectionId}))::int as queued`
  return row?.queued ?? 0
}

/** How many of the batch `batchId` (an SQL expression) yields are still in its store, not yet moved here. */
export function storedRecipients(db: Db, batchId: Fragment): Fragment {
  return db`(select coalesce(sum(jsonb_array_length(r.recipients)), 0) from batch_recipients r where r.batch_id = ${batchId})`
}

// ---------------------------------------------------------------- The account's sending, for its owner

/** Messages sent today (UTC). */
export async function sentToday(db: Db, accountId: number): Promise<number> {
  const [row] = await db<{ sent: number }[]>`
    select count(*)::int as sent from outbox
    where account_id = ${accountId} and status = 'sent'
      and created_at >= (now() at time zone 'UTC')::date::timestamp at time zone 'UTC' - interval '1 day'
      and sent_at >= (now() at time zone 'UTC')::date::timestamp at time zone 'UTC'`
  return row?.sent ?? 0
}

export interface DayActivity {
  /** YYYY-MM-DD, UTC. */
  day: string
  sent: number
  failed: number
}

/**
 * Sent and failed messages per UTC day over the last `days` days, today included, days without
 * any included: a message counts on the day it was sent, or failed for the last time.
 */
export function dailyActivity(db: Db, accountId: number, days: number): Promise<DayActivity[]> {
  const first = db`((now() at time zone 'UTC')::date - ${days - 1}::int)`
  return db<DayActivity[]>`
    with activity as (
      select (coalesce(sent_at, updated_at) at time zone 'UTC')::date as day,
        count(*) filter (where status = 'sent') as sent, count(*) filter (where status = 'failed') as failed
      from outbox
      where account_id = ${accountId} and status in ('sent', 'failed')
        -- Records are made before they end: the index on created_at bounds the scan.
        and created_at >= ${first}::timestamp at time zone 'UTC' - interval '1 day'
      group by 1
    )
    select to_char(d, 'YYYY-MM-DD') as day, coalesce(a.sent, 0)::int as sent, coalesce(a.failed, 0)::int as failed
    from generate_series(${first}, (now() at time zone 'UTC')::date, interval '1 day') as d
    left join activity a on a.day = d::date
    order by d`
}

// ---------------------------------------------------------------- The outbox as its owner browses it

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
  cc: string[]
  bcc: string[]
  subject: string
  /** Null when the connection was deleted. */
  connection_id: number | null
  batch_id: number | null
  message_id: string
  error: string | null
  attempts: number
  /** What the server last said for each recipient; null before the first attempt. */
  recipients: RecipientOutcome[] | null
  created_at: string
  updated_at: string
  sent_at: string | null
  /** When a queued message is tried next; null unless queued. */
  next_attempt_at: string | null
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
    // A batch recipient's subject is searched as its batch's template says it, placeholders and all.
    parts.push(db`(coalesce(subject, (select c.subject from batch_contents c where c.id = content_id)) ilike ${pattern}
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
): Promise<StoredRecord<OutboxListRow>[]> {
  const where = [db`account_id = ${accountId}`, ...conditions(db, filter)]
  if (page.before !== undefined) where.push(db`id < ${page.before}`)
  const all = where.reduce((sum, part) => db`${sum} and ${part}`)
  return db<StoredRecord<OutboxListRow>[]>`
    select id, status, from_address as "from", to_addresses as "to", subject, error, attempts,
      api_timestamp(created_at) as created_at, api_timestamp(sent_at) as sent_at,
      cc_addresses as cc, bcc_addresses as bcc, connection_id, batch_id, message_id, recipients,
      api_timestamp(updated_at) as updated_at,
      case when status = 'queued' then api_timestamp(next_attempt_at) end as next_attempt_at,
      ${CONTENT_SUBJECT(db)}, payload
    from outbox where ${all}
    order by id desc limit ${page.limit}`
}

export interface OutboxDetail extends OutboxListRow {
  /** The connection's sending address, null when it was deleted. */
  connection_from: string | null
  /** The batch's name, null when there is no batch (or it was deleted). */
  batch_name: string | null
  /** Null when the content was not kept. */
  text_body: string | null
  html_body: string | null
  /** Everything that happened to the message, oldest first. */
  history: HistoryEvent[]
}

/** One attempt as the record's history keeps it. */
export interface AttemptEvent {
  /** sent: the server took the message (for some recipients at least); refused: for none, for good. */
  type: 'sent' | 'deferred' | 'refused'
  at: string
  attempt: number
  outcome: AttemptKind
  reply: string | null
  recipients: RecipientOutcome[]
}

/** One event of a record's history: its creation, each attempt, its failure, a retry by hand. */
export type HistoryEvent =
  /** Queued for the worker, or submitted to POST /send, which tries it at once. */
  | { type: 'queued' | 'submitted'; at: string }
  | AttemptEvent
  | { type: 'failed'; at: string; reason: string | null }
  | { type: 'retried'; at: string; by: RetriedBy }

/**
 * The history of record `o`, oldest first, read from what is kept anyway: its creation, its
 * attempts, the failures retries undid with the retries, and its own failure. Events of one
 * instant keep that order (an attempt before the failure it caused).
 */
function history(db: Db) {
  return db`
    coalesce((
      select json_agg(e.event order by e.t, e.seq, e.n) from (
        select o.created_at as t, 0 as seq, 0::bigint as n, json_build_object(
          'type', case when o.sent_now then 'submitted' else 'queued' end, 'at', api_timestamp(o.created_at)) as event
        union all
        select a.at, 1, a.id, json_build_object(
          'type', case a.outcome when 'delivered' then 'sent' when 'refused' then 'refused' else 'deferred' end,
          'at', api_timestamp(a.at), 'attempt', a.attempt, 'outcome', a.outcome, 'reply', a.reply,
          'recipients', a.recipients)
        from outbox_attempts a where a.outbox_id = o.id
        union all
        select r.failed_at, 2, r.id, json_build_object('type', 'failed', 'at', api_timestamp(r.failed_at), 'reason', r.error)
        from outbox_retries r where r.outbox_id = o.id
        union all
        select r.at, 3, r.id, json_build_object('type', 'retried', 'at', api_timestamp(r.at), 'by', r.retried_by)
        from outbox_retries r where r.outbox_id = o.id
        union all
        select o.updated_at, 2, 0, json_build_object('type', 'failed', 'at', api_timestamp(o.updated_at), 'reason', o.error)
        where o.status = 'failed'
      ) e), '[]')`
}

/** One record of the account, with its content when kept (a batch recipient's: its batch's, whole). */
export async function outboxRecordDetail(
  db: Db,
  accountId: number,
  id: number,
): Promise<StoredRecord<OutboxDetail> | undefined> {
  const [row] = await db<StoredRecord<OutboxDetail>[]>`
    select o.id, o.status, o.from_address as "from", o.to_addresses as "to", o.cc_addresses as cc,
      o.bcc_addresses as bcc, o.subject, o.error, o.attempts, o.message_id, o.connection_id,
      c.from_address as connection_from, o.batch_id, b.name as batch_name,
      case when o.status = 'queued' then api_timestamp(o.next_attempt_at) end as next_attempt_at,
      api_timestamp(o.created_at) as created_at, api_timestamp(o.updated_at) as updated_at,
      api_timestamp(o.sent_at) as sent_at, o.text_body, o.html_body, o.recipients, o.payload,
      (select json_build_object('subject', bc.subject, 'text_body', bc.text_body, 'html_body', bc.html_body)
       from batch_contents bc where bc.id = o.content_id) as content,
      ${history(db)} as history
    from outbox o
    left join connections c on c.id = o.connection_id
    left join batches b on b.id = o.batch_id
    where o.id = ${id} and o.account_id = ${accountId}`
  return row
}
