import type { Plan } from '../plans.ts'
import type { RecipientOutcome } from '../smtp/outcome.ts'
import { clearFailures } from './connections.ts'
import type {
  AttemptRecord,
  AttemptSettlement,
  KeyedAttempt,
  MessageBodies,
  OutboxMessage,
} from './outbox-types.ts'
import type { Db, Fragment } from './sql.ts'
import { bouncesSuppressed } from './suppressions.ts'
import { BATCH_CONTENT_KEY, eventsRecorded, isoTime, recordedEvents } from './webhooks.ts'

/**
 * The outbox's records (table outbox): every attempted send, whatever its path. Here: what a
 * record reads as, how an attempt is settled with its events, and a record's end of life. The
 * queue's statements are in queue.ts, the browsing ones in outbox-browsing.ts, batches' in
 * batches.ts.
 */

/** An attempt in flight longer than this is taken for dead (well beyond every SMTP timeout). */
export const ATTEMPT_LEASE_SECONDS = 300

/**
 * The status a record reads as: a queued record whose scheduled time is ahead is `scheduled` (the
 * claim leaves it alone until then, so no statement has to move it when it falls due).
 */
export const READ_STATUS = (db: Db, o: Fragment) =>
  db`case when ${o}.status = 'queued' and ${o}.scheduled_at > mailroom_now() then 'scheduled' else ${o}.status end`

/**
 * A condition: the record (alias `o`) reads as `status` (see READ_STATUS), written so that a
 * condition on the stored status remains for an index to answer.
 */
export function readsAs(db: Db, o: Fragment, status: string): Fragment {
  if (status === 'scheduled') return db`${o}.status = 'queued' and ${o}.scheduled_at > mailroom_now()`
  if (status === 'queued') {
    return db`${o}.status = 'queued' and not coalesce(${o}.scheduled_at > mailroom_now(), false)`
  }
  return db`${o}.status = ${status}`
}

/** A record as OutboxRecord names its columns. */
export const OUTBOX_COLUMNS = (db: Db) => db`
  id, account_id, connection_id, ${READ_STATUS(db, db`outbox`)} as status, from_address as "from", to_addresses as "to",
  cc_addresses as cc, bcc_addresses as bcc, subject, message_id, error, recipients, attempts,
  case when status = 'queued' then api_timestamp(next_attempt_at) end as next_attempt_at,
  api_timestamp(created_at) as created_at, api_timestamp(updated_at) as updated_at,
  api_timestamp(sent_at) as sent_at, batch_id, tags, api_timestamp(scheduled_at) as scheduled_at, source`

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
  const rows = attempts.map(({ id, line, recipients, settlement, hardBounces }) => ({
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
    settle_bounces: hardBounces?.length ? hardBounces.map((b) => ({ ...b })) : null,
  }))
  const delivered = rows.some((r) => r.settle_delivered)
  const bounced = rows.some((r) => r.settle_bounces !== null)
  await db`
    with settlement as (
      select * from jsonb_to_recordset(${db.json(rows)}) as s(settle_id int, settle_status text, settle_error text,
        settle_delay_ms float8, settle_release_key bool, settle_failures int, settle_deferrals int,
        settle_delivered bool, settle_recipients jsonb, settle_attempt int, settle_kind text, settle_reply text,
        settle_line jsonb, settle_bounces jsonb)
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
        sent_at = case when settle_delivered then coalesce(sent_at, mailroom_now()) else sent_at end, updated_at = mailroom_now()
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
    ${bounced ? db`suppressed as (${bouncesSuppressed(db, db`settlement`, db`record`)}),` : db``}
    settled_batches as (
      select batch_id, array_agg(id) as ids, array_agg(status) as statuses from record
      where batch_id is not null and status in ('sent', 'failed') group by batch_id
    ),
    ${recordedEvents(db, db`${emailEvents(db, db`record`)} union all ${batchEndEvent(db, db`settled_batches`)}`)}
    select ${eventsRecorded(db)}`
}

/** What an email event reads of a record (see emailEventData). */
export const EVENT_COLUMNS = (db: Db) => db`
  id, account_id, batch_id, status, message_id, from_address, to_addresses, cc_addresses, bcc_addresses,
  subject, content_id, payload, attempts, error, recipients, next_attempt_at, tags`

/**
 * The email events (email.sent, .failed, .deferred or .canceled) of the records the statement
 * changed, which it names `records` (a query or a CTE's name, with EVENT_COLUMNS).
 */
export function emailEvents(db: Db, records: Fragment): Fragment {
  return db`select r.account_id, ${emailEventType(db)} as type, ${emailEventData(db)} as data from ${records} r`
}

/**
 * The data of an email event, from a row of the outbox (alias `r`, with the columns of the
 * table): what happened to the message, and to each recipient.
 */
export function emailEventData(db: Db): Fragment {
  return db`jsonb_build_object(
    'outbox_id', r.id, 'batch_id', r.batch_id, 'message_id', r.message_id, 'from', r.from_address,
    'to', to_jsonb(r.to_addresses), 'cc', to_jsonb(r.cc_addresses), 'bcc', to_jsonb(r.bcc_addresses),
    'subject', r.subject, 'status', r.status, 'attempts', r.attempts, 'error', r.error,
    'recipients', coalesce(r.recipients, '[]'::jsonb), 'tags', r.tags,
    'next_attempt_at', case when r.status = 'queued' then ${isoTime(db, db`r.next_attempt_at`)} end,
    ${BATCH_CONTENT_KEY}::text, case when r.content_id is not null
      then jsonb_build_object('id', r.content_id, 'payload', r.payload) end)`
}

/** The event type of an outbox row's new status (alias `r`). */
function emailEventType(db: Db): Fragment {
  return db`case r.status when 'queued' then 'email.deferred' when 'sent' then 'email.sent'
    when 'canceled' then 'email.canceled' else 'email.failed' end`
}

/**
 * The batch.completed or batch.failed events of the batches whose records the statement just
 * settled, for those that were their batch's last (see mailroom_batch_end_event). The statement
 * names them `settled`: a query or a CTE's name with batch_id, and the ids and new statuses of
 * its records settled here (null arrays when it settled none).
 */
export function batchEndEvent(db: Db, settled: Fragment): Fragment {
  return db`
    select f.account_id, f.type, f.data
    from ${settled} r, lateral mailroom_batch_end_event(r.batch_id, r.ids, r.statuses) f`
}

/** postgres.js's json() wants its own JSON type; outcomes are plain data. */
function jsonOf(recipients: RecipientOutcome[]) {
  return recipients.map((r) => ({ address: r.address, status: r.status, reply: r.reply }))
}

/**
 * The attempt `key` points at in the account (a KeyedAttempt), as a query to run or to nest in
 * another; both are values, or columns of a row in scope there.
 */
export function attemptOfKey(db: Db, accountId: Fragment, key: Fragment): Fragment {
  return db`
    select ${OUTBOX_COLUMNS(db)}, status = 'sending' as in_flight, lease_expires_at <= mailroom_now() as lease_over
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
    update outbox set status = 'failed', lease_expires_at = null, updated_at = mailroom_now(), error = ${error}
    where id = ${id} and status = 'sending'
    returning ${OUTBOX_COLUMNS(db)}, false as in_flight`
  return row
}

/** Said of mail whose connection was deleted while it waited (docs/decisions.md, "Connection selection"). */
export const CONNECTION_DELETED = 'connection deleted'

/**
 * Up to `limit` of the sent, failed and canceled records past their plan's retention, except
 * those of a batch that still exists, deleted. Each account's are found through its index on
 * (account_id, created_at): the one on created_at alone would walk every Pro record older than
 * the Free plan's 7 days, again for every chunk.
 */
export async function purgeOutboxChunk(
  db: Db,
  retentionDays: Record<Plan, number>,
  limit: number,
): Promise<number> {
  const gone = await db`
    delete from outbox where id in (
      select e.id from accounts a cross join lateral (
        select o.id from outbox o
        where o.account_id = a.id and o.status in ('sent', 'failed', 'canceled') and o.batch_id is null
          and o.created_at < mailroom_now() - make_interval(days => (${db.json(retentionDays)}::jsonb ->> a.plan)::int)
        limit ${limit}) e
      limit ${limit})`
  return gone.count
}
