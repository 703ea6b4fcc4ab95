import { randomUUID } from 'node:crypto'
import type { SendingConnection } from '../db/connections.ts'
import { attemptByKey, settleInterrupted } from '../db/outbox-records.ts'
import type { AttemptRecord, KeyedAttempt, OutboxMessage } from '../db/outbox-types.ts'
import type { Db } from '../db/sql.ts'
import type { Caller } from '../keys/caller.ts'
import type { EmailRequest } from './email-request.ts'

/** A Message-ID in the sender's domain, known before the attempt so a re-send can reuse it. */
export function newMessageId(from: string): string {
  return `<${randomUUID()}@${from.slice(from.lastIndexOf('@') + 1)}>`
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

const INTERRUPTED = 'The attempt was interrupted before the SMTP server answered; its outcome is unknown'

/** The attempt an idempotency key points at (see settledIfDead). */
export async function attemptByIdempotencyKey(
  db: Db,
  accountId: number,
  key: Buffer,
): Promise<AttemptRecord | undefined> {
  const row = await attemptByKey(db, accountId, key)
  return row && settledIfDead(db, accountId, key, row)
}

/**
 * The attempt `key` pointed at when read as `row`. An attempt still `sending` after its lease ran
 * out belonged to a process that died: it is settled as failed here, since its outcome is unknown.
 */
export async function settledIfDead(
  db: Db,
  accountId: number,
  key: Buffer,
  row: KeyedAttempt,
): Promise<AttemptRecord | undefined> {
  const { lease_over, ...record } = row
  if (!(record.in_flight && lease_over)) return record
  // Another request may have settled it a moment earlier; then read what it wrote.
  return (await settleInterrupted(db, record.id, INTERRUPTED)) ?? attemptByIdempotencyKey(db, accountId, key)
}
