import { randomUUID } from 'node:crypto'
import type { SendingConnection } from '../connections/selection.ts'
import type { Db } from '../db/sql.ts'
import type { Caller } from '../keys/keys.ts'
import type { Reservation } from '../quota/reservations.ts'
import type { EmailRequest } from './email-request.ts'

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
export const ATTEMPT_LEASE_SECONDS = 300

const COLUMNS = (sql: Db) => sql`
  id, account_id, connection_id, status, from_address as "from", to_addresses as "to",
  cc_addresses as cc, bcc_addresses as bcc, subject, message_id, error, attempts,
  case when status = 'queued' then api_timestamp(next_attempt_at) end as next_attempt_at,
  api_timestamp(created_at) as created_at, api_timestamp(updated_at) as updated_at,
  api_timestamp(sent_at) as sent_at`

/** A Message-ID in the sender's domain, known before the attempt so a re-send can reuse it. */
export function newMessageId(from: string): string {
  return `<${randomUUID()}@${from.slice(from.lastIndexOf('@') + 1)}>`
}

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

/** An email request sent by `caller` through `connection`, under a new Message-ID. */
export function outboxMessage(
  caller: Caller,
  connection: SendingConnection,
  request: EmailRequest,
): OutboxMessage {
  return {
    accountId: caller.accountId,
    connectionId: connection.id,
    from: connection.from_address,
    to: request.to,
    cc: request.cc,
    bcc: request.bcc,
    subject: request.subject,
    messageId: newMessageId(connection.from_address),
  }
}

export interface NewAttempt extends OutboxMessage {
  idempotencyKey: Buffer | null
}

/**
 * Records an attempt about to reach SMTP. Returns undefined when another request already holds
 * the same idempotency key (the caller then replays that one instead).
 */
export async function recordAttempt(tx: Db, attempt: NewAttempt): Promise<number | undefined> {
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
 * Marks the record sent and clears the connection's failure count, in one round trip: this is
 * on every successful send's path.
 */
export async function recordDelivered(
  sql: Db,
  id: number,
  connectionId: number,
  messageId: string,
): Promise<void> {
  await sql`
    with sent as (
      update outbox set status = 'sent', message_id = ${messageId}, sent_at = now(), lease_expires_at = null,
        claimed_by = null, next_attempt_at = null, text_body = null, html_body = null, updated_at = now()
      where id = ${id}
    )
    update connections set consecutive_failures = 0, pause_streak = 0
    where id = ${connectionId} and (consecutive_failures <> 0 or pause_streak <> 0)`
}

/**
 * `releaseKey`: the attempt's idempotency key is freed, so that the caller's retry with the same
 * key is a new attempt rather than a replay of this failure.
 */
export async function markFailed(sql: Db, id: number, error: string, releaseKey = false): Promise<void> {
  await sql`
    update outbox set status = 'failed', error = ${error}, lease_expires_at = null, updated_at = now(),
      idempotency_key_sha256 = ${releaseKey ? null : sql`idempotency_key_sha256`}
    where id = ${id}`
}

/**
 * The attempt an idempotency key points at. An attempt still `sending` after its lease ran out
 * belonged to a process that died: it is settled as failed here, since its outcome is unknown.
 */
export async function attemptByIdempotencyKey(
  sql: Db,
  accountId: number,
  key: Buffer,
): Promise<(OutboxRecord & { in_flight: boolean }) | undefined> {
  const [row] = await sql<(OutboxRecord & { in_flight: boolean; lease_over: boolean })[]>`
    select ${COLUMNS(sql)}, status = 'sending' as in_flight, lease_expires_at <= now() as lease_over
    from outbox where account_id = ${accountId} and idempotency_key_sha256 = ${key}`
  if (!row) return undefined
  const { lease_over, ...record } = row
  if (!(record.in_flight && lease_over)) return record
  const [settled] = await sql<(OutboxRecord & { in_flight: boolean })[]>`
    update outbox set status = 'failed', lease_expires_at = null, updated_at = now(), error = ${INTERRUPTED}
    where id = ${record.id} and status = 'sending'
    returning ${COLUMNS(sql)}, false as in_flight`
  // Another request may have settled it a moment earlier; read what it wrote.
  return settled ?? attemptByIdempotencyKey(sql, accountId, key)
}

const INTERRUPTED = 'The attempt was interrupted before the SMTP server answered; its outcome is unknown'

export function listOutbox(sql: Db, accountId: number, limit: number): Promise<OutboxRecord[]> {
  return sql<OutboxRecord[]>`
    select ${COLUMNS(sql)} from outbox where account_id = ${accountId} order by id desc limit ${limit}`
}
