import type { RecipientOutcome } from '../smtp/outcome.ts'
import type { Payload } from './audiences.ts'
import { recordBatchEnds, storedRecipients } from './batches.ts'
import { heldUntil, mayGoNow } from './connections.ts'
import { dueInMs, expansionRunRequest, queueRunComing } from './jobs.ts'
import { claimedFields, type StoredAttachment } from './message-fields.ts'
import { ATTEMPT_LEASE_SECONDS, CONNECTION_DELETED, EVENT_COLUMNS, emailEvents } from './outbox-records.ts'
import { rawMessage } from './raw-messages.ts'
import type { Db, Fragment } from './sql.ts'
import { suppressedRecipients } from './suppressions.ts'
import { type LimitRefusal, type Limits, takeUnitsCall, type UnitsRow, unitsOf } from './usage.ts'
import { eventsRecorded, recordedEvents } from './webhooks.ts'
import { type OwnClaims, orphanedClaim } from './worker-processes.ts'

/**
 * The queue: the outbox records in status `queued`, claimed from it by the worker, put back,
 * failed when they can no longer go, and found again when their run was lost. Mail is put in it
 * by queue-entry.ts.
 */

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
  /** Its recipients on the account's suppression list that apply to it (null for none). */
  suppressed: { email: string; reason: 'hard_bounce' | 'complaint' | 'unsubscribe' | 'manual' }[] | null
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
  headers: Record<string, string> | null
  attachments: StoredAttachment[] | null
  /** The attachments' bytes, in their order (none once the email has ended). */
  attachment_contents: Buffer[]
  /** A message submitted over SMTP: the bytes it goes as; null for one composed from its fields. */
  raw: Buffer | null
  /** It may only go to a server that offers SMTPUTF8. */
  needs_smtputf8: boolean
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
        usage_day = u.usage_day, quota_window = u.quota_window, updated_at = mailroom_now()
      from (select id from due order by next_attempt_at, id limit (select granted from units)) chosen, units u
      where o.id = chosen.id and u.refused is null
      returning o.id, o.attempts, o.failures, o.deferrals,
        -- A scheduled message's time in the queue starts when it is due.
        extract(epoch from mailroom_now() - coalesce(o.scheduled_at, o.created_at))::float8 * 1000 as age_ms,
        o.recipients, ${suppressedRecipients(db)} as suppressed,
        o.message_id, o.to_addresses, o.cc_addresses, o.bcc_addresses, o.subject, o.text_body, o.html_body,
        o.content_id, o.payload, o.request_id, o.unsubscribe_url, o.usage_day::text, o.quota_window,
        o.next_attempt_at, ${claimedFields(db)}, ${rawMessage(db, db`o`)} as raw, o.needs_smtputf8
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
 * Ends the connection's mail queued `maxAgeMs` ago or earlier (a scheduled email: due that long
 * ago), failed with its last error (or `reason`), as an attempt past the queue lifetime would end
 * it: mail waiting behind a server out of reach is not tried, and would otherwise wait for as
 * long as the outage lasts.
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
    tx`(select 'Still deferred after ' || h || case h when 1 then ' hour: ' else ' hours: ' end
        from (select round(extract(epoch from mailroom_now() - coalesce(scheduled_at, created_at)) / 3600) as h) age)
       || coalesce(error, ${reason})`,
    tx`coalesce(scheduled_at, created_at) <= mailroom_now() - ${maxAgeMs} * interval '1 millisecond'`,
  )
}

/** Fails the connection's queued mail that `only` picks, with `error`, its events and the ends of its batches. */
async function failQueued(tx: Db, connectionId: number, error: Fragment, only: Fragment): Promise<void> {
  const batches = await tx<{ batch_id: number }[]>`
    with record as (
      update outbox set status = 'failed', error = ${error}, next_attempt_at = null, updated_at = mailroom_now()
      where connection_id = ${connectionId} and status = 'queued' and ${only}
      returning ${EVENT_COLUMNS(tx)}
    ), ${recordedEvents(tx, emailEvents(tx, tx`record`))}
    select distinct r.batch_id from record r where r.batch_id is not null and ${eventsRecorded(tx)} >= 0`
  await recordBatchEnds(
    tx,
    batches.map((b) => b.batch_id),
  )
}

/**
 * The connection's queued mail is due now, whatever back-off each message was waiting out: a
 * pause that ends lets all of it go (pacing and the other limits still meter it). Scheduled mail
 * still waits for its time.
 */
export async function queuedDueNow(db: Db, connectionId: number): Promise<void> {
  await db`
    update outbox set next_attempt_at = mailroom_now()
    where connection_id = ${connectionId} and status = 'queued' and next_attempt_at > mailroom_now()
      and not coalesce(scheduled_at > mailroom_now(), false)`
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
      next_attempt_at = mailroom_now(), claimed_by = null, updated_at = mailroom_now()
    where ${orphanedClaim(tx, 'updated_at', ATTEMPT_LEASE_SECONDS, own, graceMs)}
    returning connection_id`
  return [...new Set(rows.flatMap((r) => (r.connection_id === null ? [] : [r.connection_id])))]
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
