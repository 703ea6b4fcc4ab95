import { requireFeature } from '../accounts/features.ts'
import { selectConnection } from '../connections/selection.ts'
import type { SendingConnection } from '../db/connections.ts'
import type { Db } from '../db/sql.ts'
import type { FastPath } from '../fast-path/fast-path.ts'
import type { Caller } from '../keys/caller.ts'

/**
 * Mail submitted over SMTP: the relay's door (src/relay/) calls these two, in this order, and
 * answers by their outcome. Both take `{ sql, fastPath }` (members of Services) as their first
 * parameter, and raise the error catalog's AppErrors, the same codes /enqueue raises:
 * FEATURE_NOT_AVAILABLE (a Free account), CONNECTION_SCOPE_MISMATCH, CONNECTION_NOT_FOUND
 * (no such connection, or a disabled one); the door maps them to SMTP replies.
 */
export interface SubmissionServices {
  sql: Db
  fastPath: FastPath
}

/**
 * MAIL FROM: the connection `from` names for this caller, chosen as /enqueue chooses it (Pro
 * only, since the relay queues; a key's scope wins; a disabled connection is refused; a paused
 * one is accepted, the mail waiting for it).
 */
export async function relayConnection(
  { sql }: SubmissionServices,
  caller: Caller,
  from: string,
): Promise<SendingConnection> {
  requireFeature(caller, 'asyncSending')
  return selectConnection(sql, caller, from, 'queued')
}

/** What the door received once DATA is done. */
export interface Submitted {
  caller: Caller
  connection: SendingConnection
  /** The envelope's MAIL FROM, as the client gave it. */
  mailFrom: string
  /** The envelope's RCPT TO addresses. */
  recipients: string[]
  /** The message exactly as the client sent it (dot-unstuffed, CRLF line ends). */
  message: Buffer
  /** The client asked for SMTPUTF8 in MAIL FROM. */
  smtpUtf8: boolean
  requestId: string
}

/**
 * DATA done: stores the message durably (the outbox record, its raw bytes and the job that
 * sends it, in one transaction) and returns after the commit, so the door answers 250 only
 * for mail that survives a crash. A bad X-Mailroom-Tags header raises VALIDATION_ERROR naming it.
 */
export async function acceptSubmission(
  _services: SubmissionServices,
  _submitted: Submitted,
): Promise<{ outboxId: number; messageId: string }> {
  throw new Error('not implemented yet')
}
