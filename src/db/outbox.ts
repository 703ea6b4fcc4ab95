import { currentRequestId } from '../log.ts'
import type { Plan } from '../plans.ts'
import { clearFailures, mayGoNow } from './connections.ts'
import { queueRunComing, queueRunRequest } from './jobs.ts'
import type { Db } from './sql.ts'

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
  attempts: number
  /** When a queued message is tried next (UTC, API shape); null unless queued. */
  next_attempt_at: string | null
  created_at: string
  updated_at: string
  sent_at: string | null
}

/** An attempt in flight longer than this is taken for dead (well beyond every SMTP timeout). */
const ATTEMPT_LEASE_SECONDS = 300

const COLUMNS = (db: Db) => db`
  id, account_id, connection_id, status, from_address as "from", to_addresses as "to",
  cc_addresses as cc, bcc_addresses as bcc, subject, message_id, error, attempts,
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
export interface Reservation {
  usageDay: string | null
  quotaWindow: Date | null
}

/**
 * Records an attempt about to reach SMTP (POST /send). Returns undefined when another request
 * already holds the same idempotency key (the caller then replays that one instead).
 */
export async function recordAttempt(
  tx: Db,
  attempt: OutboxMessage & { idempotencyKey: Buffer | null },
): Promise<number | undefined> {
  const [row] = await tx<{ id: number }[]>`
    insert into outbox (account_id, connection_id, status, from_address, to_addresses, cc_addresses,
                        bcc_addresses, subject, message_id, idempotency_key_sha256, lease_expires_at, attempts)
    values (${attempt.accountId}, ${attempt.connectionId}, 'sending', ${attempt.from}, ${attempt.to},
            ${attempt.cc}, ${attempt.bcc}, ${attempt.subject}, ${attempt.messageId}, ${attempt.idempotencyKey},
            now() + make_interval(secs => ${ATTEMPT_LEASE_SECONDS}), 1)
    on conflict (account_id, idempotency_key_sha256) where idempotency_key_sha256 is not null do nothing
    returning id`
  return row?.id
}

/** Notes where the attempt's units were taken, for a give-back. */
export async function recordReservation(tx: Db, id: number, reservation: Reservation): Promise<void> {
  if (reservation.usageDay === null && reservation.quotaWindow === null) return
  await tx`
    update outbox set usage_day = ${reservation.usageDay}, quota_window = ${reservation.quotaWindow} where id = ${id}`
}

/**
 * Marks the record sent (clearing the error of an earlier attempt) and ends the connection's
 * failure streak, in one round trip: this is on every successful send's path.
 */
export async function recordDelivered(
  db: Db,
  id: number,
  connectionId: number,
  messageId: string,
): Promise<void> {
  await db`
    with sent as (
      update outbox set status = 'sent', message_id = ${messageId}, error = null, sent_at = now(),
        lease_expires_at = null, claimed_by = null, next_attempt_at = null, text_body = null, html_body = null,
        updated_at = now()
      where id = ${id}
    )
    ${clearFailures(db, connectionId)}`
}

/**
 * A /send attempt that failed. `releaseKey`: its idempotency key is freed, so that the caller's
 * retry with the same key is a new attempt rather than a replay of this failure.
 */
export async function markAttemptFailed(
  db: Db,
  id: number,
  error: string,
  releaseKey: boolean,
): Promise<void> {
  await db`
    update outbox set status = 'failed', error = ${error}, lease_expires_at = null, updated_at = now(),
      idempotency_key_sha256 = ${releaseKey ? null : db`idempotency_key_sha256`}
    where id = ${id}`
}

export type AttemptRecord = OutboxRecord & { in_flight: boolean }

/** The attempt an idempotency key points at, and whether its lease ran out while in flight. */
export async function attemptByKey(
  db: Db,
  accountId: number,
  key: Buffer,
): Promise<(AttemptRecord & { lease_over: boolean }) | undefined> {
  const [row] = await db<(AttemptRecord & { lease_over: boolean })[]>`
    select ${COLUMNS(db)}, status = 'sending' as in_flight, lease_expires_at <= now() as lease_over
    from outbox where account_id = ${accountId} and idempotency_key_sha256 = ${key}`
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

export function selectOutbox(db: Db, accountId: number, limit: number): Promise<OutboxRecord[]> {
  return db<OutboxRecord[]>`
    select ${COLUMNS(db)} from outbox where account_id = ${accountId} order by id desc limit ${limit}`
}

// ---------------------------------------------------------------- The queue

export interface QueuedMessage extends Omit<OutboxMessage, 'connectionId'> {
  text_body?: string | undefined
  html_body?: string | undefined
  /** The batch the message is one recipient of. */
  batchId?: number
}

/**
 * Puts messages for one connection in the queue, due now, and asks for a run of its queue, in
 * one statement whatever their number. Each keeps the id of the API request being served, so
 * that the worker logs about it under that id. Returns their outbox ids, in order, and when
 * they were queued.
 */
export async function enqueueMessages(
  db: Db,
  connectionId: number,
  messages: QueuedMessage[],
): Promise<{ id: number; queued_at: Date }[]> {
  if (messages.length === 0) return []
  const requestId = currentRequestId() ?? null
  const rows = messages.map((m) => ({
    account_id: m.accountId,
    from_address: m.from,
    to_addresses: m.to,
    cc_addresses: m.cc,
    bcc_addresses: m.bcc,
    subject: m.subject,
    text_body: m.text_body ?? null,
    html_body: m.html_body ?? null,
    message_id: m.messageId,
    batch_id: m.batchId ?? null,
  }))
  return db<{ id: number; queued_at: Date }[]>`
    with queued as (
      insert into outbox (account_id, connection_id, status, from_address, to_addresses, cc_addresses,
                          bcc_addresses, subject, text_body, html_body, message_id, batch_id, next_attempt_at,
                          request_id)
      select account_id, ${connectionId}::int, 'queued', from_address, to_addresses, cc_addresses,
             bcc_addresses, subject, text_body, html_body, message_id, batch_id, mailroom_now(), ${requestId}::text
      from rows from (jsonb_to_recordset(${db.json(rows)}) as (
             account_id int, from_address text, to_addresses text[], cc_addresses text[], bcc_addresses text[],
             subject text, text_body text, html_body text, message_id text, batch_id int))
           with ordinality as m(account_id, from_address, to_addresses, cc_addresses, bcc_addresses, subject,
                                text_body, html_body, message_id, batch_id, n)
      order by n
      returning id, created_at as queued_at
    ), run as (${queueRunRequest(db, connectionId)})
    -- Referring to the run makes it happen; ids follow the messages' order.
    select id, queued_at from queued, (select count(*) from run) as requested order by id`
}

/** A claimed message and what its retry schedule needs. */
export interface ClaimedMessage {
  id: number
  failures: number
  deferrals: number
  message_id: string
  to_addresses: string[]
  cc_addresses: string[]
  bcc_addresses: string[]
  subject: string
  text_body: string | null
  html_body: string | null
  /** The API request that queued it (X-Request-Id), if any. */
  request_id: string | null
}

/**
 * Takes the connection's next due message for `processId`, skipping those other senders hold,
 * unless the connection is disabled, paused or backing off. Inside the caller's transaction, so
 * that a limit refusing the send puts it back untouched.
 */
export async function claimNext(
  tx: Db,
  connectionId: number,
  processId: string,
): Promise<ClaimedMessage | undefined> {
  const [row] = await tx<ClaimedMessage[]>`
    with next as (
      select id from outbox
      where connection_id = ${connectionId} and status = 'queued' and next_attempt_at <= mailroom_now()
      order by next_attempt_at, id
      limit 1
      for update skip locked
    )
    update outbox o set status = 'sending', claimed_by = ${processId}, attempts = o.attempts + 1,
      updated_at = now()
    from next, connections c
    where o.id = next.id and c.id = o.connection_id and ${mayGoNow(tx)}
    returning o.id, o.failures, o.deferrals, o.message_id, o.to_addresses, o.cc_addresses, o.bcc_addresses,
      o.subject, o.text_body, o.html_body, o.request_id`
  return row
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

/** Back to the queue, due after `delayMs` (see backToQueue). */
export async function requeue(
  db: Db,
  id: number,
  delayMs: number,
  error: string,
  counter: 'failures' | 'deferrals',
): Promise<void> {
  await db`
    update outbox set
      ${backToQueue(db, error)},
      failures = failures + ${counter === 'failures' ? 1 : 0},
      deferrals = deferrals + ${counter === 'deferrals' ? 1 : 0},
      next_attempt_at = mailroom_now() + ${delayMs} * interval '1 millisecond',
      claimed_by = null, updated_at = now()
    where id = ${id}`
}

/**
 * Ends a queued message as failed with the reason (a refused address, retries used up). Its
 * content stays until retention removes the record: a batch's failed recipients can be retried.
 */
export async function failQueued(db: Db, id: number, error: string): Promise<void> {
  await db`
    update outbox set status = 'failed', error = ${error}, failures = failures + 1,
      next_attempt_at = null, claimed_by = null, updated_at = now()
    where id = ${id}`
}

/** A deleted connection fails the mail still waiting on it; run in the deleting transaction. */
export async function failQueuedOfConnection(tx: Db, connectionId: number): Promise<void> {
  await tx`
    update outbox set status = 'failed', error = ${CONNECTION_DELETED}, next_attempt_at = null,
      updated_at = now()
    where connection_id = ${connectionId} and status = 'queued'`
}

/** What decides when the connection's queue runs next. */
export interface QueueState {
  disabled: boolean
  /** Until a pause or a push-back back-off ends; null when neither; Infinity when paused until resumed. */
  heldForMs: number | null
  /** Until the earliest queued message is due (0: due now); null when nothing is queued. */
  nextDueInMs: number | null
}

/** The connection's queue state, or undefined when the connection no longer exists. */
export async function queueState(db: Db, connectionId: number): Promise<QueueState | undefined> {
  const [row] = await db<{ disabled: boolean; held_for_ms: number | null; next_due_in_ms: number | null }[]>`
    select c.disabled,
      case when c.paused_until = 'infinity' then 'infinity'::float8
           when greatest(c.paused_until, c.queue_backoff_until) > mailroom_now()
             then ceil(extract(epoch from greatest(c.paused_until, c.queue_backoff_until) - mailroom_now())
                       * 1000)::float8 end as held_for_ms,
      (select greatest(0, ceil(extract(epoch from min(next_attempt_at) - mailroom_now()) * 1000))::float8
       from outbox where connection_id = c.id and status = 'queued') as next_due_in_ms
    from connections c where c.id = ${connectionId}`
  if (!row) return undefined
  return { disabled: row.disabled, heldForMs: row.held_for_ms, nextDueInMs: row.next_due_in_ms }
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
 * SMTP attempt lasts (a live process lost track of them, say when the database went away
 * mid-send): their outcome is unknown, so they are sent again with the same Message-ID.
 * Returns the connections whose queues need a run.
 */
export async function releaseOrphanedClaims(tx: Db): Promise<number[]> {
  const rows = await tx<{ connection_id: number | null }[]>`
    update outbox set
      ${backToQueue(tx, INTERRUPTED_CLAIM)},
      next_attempt_at = mailroom_now(), claimed_by = null, updated_at = now()
    where claimed_by is not null and status = 'sending'
      and (claimed_by not in (select id from worker_processes)
           or updated_at < now() - make_interval(secs => ${ATTEMPT_LEASE_SECONDS}))
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

export function failedRecipients(db: Db, batchId: number): Promise<FailedRecipient[]> {
  return db<FailedRecipient[]>`
    select id as outbox_id, to_addresses[1] as email, error, attempts, api_timestamp(updated_at) as updated_at
    from outbox where batch_id = ${batchId} and status = 'failed' order by id`
}

/**
 * Queues a batch's failed recipients again (their counts reset), through their connection or,
 * when theirs was deleted, `fallbackConnectionId`. Returns the connection of each.
 */
export async function requeueFailedOfBatch(
  tx: Db,
  batchId: number,
  fallbackConnectionId: number | null,
): Promise<(number | null)[]> {
  const rows = await tx<{ connection_id: number | null }[]>`
    update outbox set status = 'queued', error = null, failures = 0, deferrals = 0,
      connection_id = coalesce(connection_id, ${fallbackConnectionId}::int), next_attempt_at = mailroom_now(),
      updated_at = now()
    where batch_id = ${batchId} and status = 'failed'
    returning connection_id`
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
