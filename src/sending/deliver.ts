import { recordProviderFailure } from '../connections/health.ts'
import type { SendingConnection } from '../db/connections.ts'
import type { AttemptLine } from '../db/outbox-types.ts'
import type { Db, Sql } from '../db/sql.ts'
import type { FastPath } from '../fast-path/fast-path.ts'
import type { Logger } from '../log.ts'
import type { EmailMetrics } from '../metrics.ts'
import { composeMail, type FileAttachment } from '../smtp/compose.ts'
import { type AttemptOutcome, delivered, outcomeOfError, outcomeOfSent } from '../smtp/outcome.ts'
import { sendRaw, type TransportPool } from '../smtp/pool.ts'

export interface OutgoingMessage {
  /** The outbox record this is: named in the logs. */
  outboxId: number
  messageId: string
  /** The message's headers name these (Bcc never); who it goes to in this attempt is `envelope`. */
  to: string[]
  cc: string[]
  /** The recipients this attempt goes to: all of them at first, those still deferred later. */
  envelope: string[]
  subject: string
  text?: string
  html?: string
  /** Checked addresses: a form's submitter, or the caller's reply_to. */
  replyTo?: string | string[]
  /** Headers the service itself computes (List-Unsubscribe). */
  headers?: Record<string, string>
  /** The caller's extra headers, checked (none the service sets, sending/message-extras.ts). */
  extraHeaders?: Record<string, string>
  attachments?: FileAttachment[]
  /** A caller waits for the answer (POST /send): ahead of queued mail for a session. */
  callerWaits?: boolean
  /**
   * A message submitted over SMTP: `raw` goes as it is (the fields above only name it), and
   * only to a server that offers SMTPUTF8 when `smtpUtf8`.
   */
  submitted?: { raw: Buffer; smtpUtf8: boolean }
}

export interface DeliveryContext {
  sql: Db
  log: Logger
  transports: TransportPool
  metrics: EmailMetrics
}

/**
 * What a send path needs, with a pool rather than a transaction (each attempt opens its own),
 * and the process's statements shared in rounds.
 */
export type SendContext = DeliveryContext & { sql: Sql; fastPath: FastPath }

/** Header values are one line: CR and LF can never start a header of their own. */
function oneLine(value: string): string {
  return value.replace(/[\r\n]+/g, ' ')
}

/** How long the caller will wait after a failure of the connection of each kind (see deliver). */
export interface FailureWait {
  pushback: number
  unreachable: number
}

/**
 * An attempt's outcome; for a failure of the whole connection, whether it was the one counted
 * toward a pause (the first of its window) or met a failure already known.
 */
export type Delivery = AttemptOutcome & { connectionFailure?: 'counted' | 'known' }

/**
 * Hands one message to SMTP through one connection and reads the server's answer recipient by
 * recipient: the only way Mailroom sends mail (POST /send, the queue and batches all come here).
 * A failure that speaks for the whole connection (push-back, a server out of reach) is counted
 * toward pausing it, once per the wait it causes (`waitAfter`); a recipient's own refusal is
 * not. Recording the outcome is the caller's.
 */
export async function deliver(
  context: DeliveryContext,
  connection: SendingConnection,
  message: OutgoingMessage,
  waitAfter: FailureWait,
): Promise<Delivery> {
  let outcome: AttemptOutcome
  try {
    const transporter = await context.transports.get(connection)
    // The envelope is always the connection's address and this attempt's recipients.
    const envelope = { from: connection.from_address, to: message.envelope }
    const info = await sendRaw(transporter, {
      envelope,
      raw: message.submitted?.raw ?? (await composed(connection, message)),
      messageId: message.messageId,
      callerWaits: message.callerWaits,
      smtpUtf8: message.submitted?.smtpUtf8 === true,
      // A composed message is 7-bit (its parts encoded); an app's may not be.
      eightBit: message.submitted !== undefined,
    })
    outcome = outcomeOfSent(message.envelope, info)
  } catch (error) {
    outcome = outcomeOfError(message.envelope, error)
  }
  const failure = outcome.pushback ?? outcome.unreachable
  let connectionFailure: Delivery['connectionFailure']
  if (failure !== undefined) {
    const kind = outcome.pushback !== undefined ? 'pushback' : 'unreachable'
    const { pausedNow, counted } = await recordProviderFailure(context.sql, connection.id, {
      kind,
      reason: failure,
      windowMs: waitAfter[kind],
    })
    if (pausedNow)
      context.log.warn(
        { connectionId: connection.id, reason: failure },
        'connection paused after repeated failures',
      )
    connectionFailure = counted ? 'counted' : 'known'
  }
  const refused = outcome.recipients.filter((r) => r.status !== 'accepted')
  if (!delivered(outcome) || refused.length > 0) {
    // The server's own words, never the recipients' addresses or the message.
    context.log.warn(
      {
        outboxId: message.outboxId,
        connectionId: connection.id,
        accountId: connection.account_id,
        refused: refused.length,
        of: outcome.recipients.length,
        reason: failure ?? outcome.reply ?? refused[0]?.reply,
      },
      delivered(outcome) ? 'SMTP attempt not delivered to every recipient' : 'SMTP attempt failed',
    )
  }
  return connectionFailure === undefined ? outcome : { ...outcome, connectionFailure }
}

/**
 * The message composed from its fields alone: no caller-supplied envelope or raw source, and only
 * checked headers (the service's own first).
 */
function composed(connection: SendingConnection, message: OutgoingMessage): Promise<Buffer> {
  const headers = { ...message.headers, ...message.extraHeaders }
  return composeMail({
    from: connection.from_address,
    to: message.to,
    cc: message.cc,
    subject: oneLine(message.subject),
    ...(message.text === undefined ? {} : { text: message.text }),
    ...(message.html === undefined ? {} : { html: message.html }),
    ...(message.replyTo === undefined ? {} : { replyTo: message.replyTo }),
    ...(Object.keys(headers).length === 0 ? {} : { headers }),
    ...(message.attachments === undefined ? {} : { attachments: message.attachments }),
    messageId: message.messageId,
  })
}

/** The attempt's line in its record's history. */
export function attemptLine(attempt: number, outcome: AttemptOutcome): AttemptLine {
  const kind = delivered(outcome)
    ? 'delivered'
    : outcome.pushback !== undefined
      ? 'pushback'
      : outcome.unreachable !== undefined
        ? 'unreachable'
        : outcome.recipients.some((r) => r.status === 'deferred')
          ? 'deferred'
          : 'refused'
  const reply =
    outcome.reply ?? outcome.pushback ?? outcome.unreachable ?? outcome.recipients[0]?.reply ?? null
  return { attempt, kind, reply, recipients: outcome.recipients }
}
