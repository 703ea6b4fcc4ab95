import type { Db } from '../db/sql.ts'
import { queueRunRequest } from '../worker/jobs.ts'
import type { OutgoingMessage } from './deliver.ts'
import { ATTEMPT_LEASE_SECONDS, type OutboxMessage } from './outbox.ts'

/**
 * Queued mail (POST /enqueue and batches) is outbox records in status `queued`, sent from
 * there by the worker. These are the queue's statements; src/sending/send-queued.ts drives them.
 */

export interface QueuedMessage extends OutboxMessage {
  text_body?: string | undefined
  html_body?: string | undefined
  /** The batch the message is one recipient of. */
  batchId?: number
}

/**
 * Puts messages for one connection in the queue, due now, and asks for a run of its queue, in
 * one statement. Returns their outbox ids, in order, and when they were queued.
 */
export async function enqueueMessages(
  db: Db,
  connectionId: number,
  messages: Omit<QueuedMessage, 'connectionId'>[],
): Promise<{ id: number; queued_at: Date }[]> {
  if (messages.length === 0) return []
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
  // One statement for any number of messages: a batch of thousands is queued in one round trip.
  return db<{ id: number; queued_at: Date }[]>`
    with queued as (
      insert into outbox (account_id, connection_id, status, from_address, to_addresses, cc_addresses,
                          bcc_addresses, subject, text_body, html_body, message_id, batch_id, next_attempt_at)
      select account_id, ${connectionId}::int, 'queued', from_address, to_addresses, cc_addresses,
             bcc_addresses, subject, text_body, html_body, message_id, batch_id, mailroom_now()
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
  message: OutgoingMessage
}

interface ClaimRow {
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
  const [row] = await tx<ClaimRow[]>`
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
    where o.id = next.id and c.id = o.connection_id
      and not c.disabled and not coalesce(greatest(c.paused_until, c.queue_backoff_until) > mailroom_now(), false)
    returning o.id, o.failures, o.deferrals, o.message_id, o.to_addresses, o.cc_addresses, o.bcc_addresses,
      o.subject, o.text_body, o.html_body`
  if (!row) return undefined
  return {
    id: row.id,
    failures: row.failures,
    deferrals: row.deferrals,
    message: {
      messageId: row.message_id,
      to: row.to_addresses,
      cc: row.cc_addresses,
      bcc: row.bcc_addresses,
      subject: row.subject,
      ...(row.text_body === null ? {} : { text: row.text_body }),
      ...(row.html_body === null ? {} : { html: row.html_body }),
    },
  }
}

/** Said of mail whose connection was deleted while it waited (the rulings' wording). */
export const CONNECTION_DELETED = 'connection deleted'

/**
 * Back to `queued` with `error` as the last error; but mail whose connection was deleted
 * meanwhile fails instead, since nothing would ever send it.
 */
function backToQueue(sql: Db, error: string) {
  return sql`
    status = case when connection_id is null then 'failed' else 'queued' end,
    error = case when connection_id is null then ${CONNECTION_DELETED} else ${error} end`
}

/** Back to the queue, due after `delayMs` (see backToQueue). */
export async function requeue(
  sql: Db,
  id: number,
  delayMs: number,
  error: string,
  counter: 'failures' | 'deferrals',
): Promise<void> {
  await sql`
    update outbox set
      ${backToQueue(sql, error)},
      failures = failures + ${counter === 'failures' ? 1 : 0},
      deferrals = deferrals + ${counter === 'deferrals' ? 1 : 0},
      next_attempt_at = mailroom_now() + ${delayMs} * interval '1 millisecond',
      claimed_by = null, updated_at = now()
    where id = ${id}`
}

/** Push-back: the connection's queue waits `delayMs` before it tries any message again. */
export async function backOffConnection(sql: Db, connectionId: number, delayMs: number): Promise<void> {
  await sql`
    update connections set queue_backoff_until = greatest(
      coalesce(queue_backoff_until, '-infinity'), mailroom_now() + ${delayMs} * interval '1 millisecond')
    where id = ${connectionId}`
}

/**
 * Ends a queued message as failed with the reason (a refused address, retries used up). Its
 * content stays until retention removes the record: a batch's failed recipients can be retried.
 */
export async function failQueued(sql: Db, id: number, error: string, countFailure: boolean): Promise<void> {
  await sql`
    update outbox set status = 'failed', error = ${error}, failures = failures + ${countFailure ? 1 : 0},
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
export async function queueState(sql: Db, connectionId: number): Promise<QueueState | undefined> {
  const [row] = await sql<{ disabled: boolean; held_for_ms: number | null; next_due_in_ms: number | null }[]>`
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
 * Connections whose due mail has waited `graceMs` past its time with no queue run pending or
 * under way, though nothing holds the connection back: a safety net for whatever lost its run.
 */
export async function connectionsWithStrandedMail(sql: Db, graceMs: number): Promise<number[]> {
  const rows = await sql<{ connection_id: number }[]>`
    select distinct o.connection_id from outbox o join connections c on c.id = o.connection_id
    where o.status = 'queued' and o.next_attempt_at <= mailroom_now() - ${graceMs} * interval '1 millisecond'
      and not c.disabled and not coalesce(greatest(c.paused_until, c.queue_backoff_until) > mailroom_now(), false)
      and not exists (select 1 from graphile_worker.jobs j where j.key = 'queue:' || o.connection_id)`
  return rows.map((r) => r.connection_id)
}

const INTERRUPTED = 'The worker sending it stopped before the SMTP server answered; it is sent again'

/**
 * Queues again the messages held by worker processes that are gone (see src/worker/liveness.ts),
 * or held longer than any SMTP attempt lasts (a live process lost track of them, say when the
 * database went away mid-send): their outcome is unknown, so they are sent again with the same
 * Message-ID. Returns the connections whose queues need a run.
 */
export async function releaseOrphanedClaims(tx: Db): Promise<number[]> {
  const rows = await tx<{ connection_id: number | null }[]>`
    update outbox set
      ${backToQueue(tx, INTERRUPTED)},
      next_attempt_at = mailroom_now(), claimed_by = null, updated_at = now()
    where claimed_by is not null and status = 'sending'
      and (claimed_by not in (select id from worker_processes)
           or updated_at < now() - make_interval(secs => ${ATTEMPT_LEASE_SECONDS}))
    returning connection_id`
  return [...new Set(rows.flatMap((r) => (r.connection_id === null ? [] : [r.connection_id])))]
}
