import { recordProviderFailure } from '../connections/health.ts'
import type { SendingConnection } from '../db/connections.ts'
import { recordDelivered } from '../db/outbox.ts'
import type { Db, Sql } from '../db/sql.ts'
import type { Logger } from '../log.ts'
import type { EmailMetrics } from '../metrics.ts'
import type { TransportPool } from '../smtp/pool.ts'
import {
  classifySmtpError,
  isAuthFailure,
  isPermanentRefusal,
  type SmtpErrorClass,
  smtpReason,
} from '../smtp/transport.ts'

export interface OutgoingMessage {
  messageId: string
  to: string[]
  cc: string[]
  bcc: string[]
  subject: string
  text?: string
  html?: string
}

export class DeliveryError extends Error {
  override name = 'DeliveryError'
  constructor(
    readonly kind: SmtpErrorClass,
    /** The SMTP server's reply, or what kept us from reaching it; never a credential. */
    readonly reason: string,
    /** Trying again will not help (see isPermanentRefusal); queued mail then fails at once. */
    readonly permanent: boolean,
  ) {
    super(reason)
  }
}

export interface DeliveryContext {
  sql: Db
  log: Logger
  transports: TransportPool
  metrics: EmailMetrics
}

/** What a send path needs, with a pool rather than a transaction: each attempt opens its own. */
export type SendContext = DeliveryContext & { sql: Sql }

/** Header values are one line: CR and LF can never start a header of their own. */
function oneLine(value: string): string {
  return value.replace(/[\r\n]+/g, ' ')
}

/**
 * Sends one recorded outbox message through one connection and waits for the server to accept
 * it: the only way Mailroom hands mail to SMTP (POST /send, the queue and batches all come
 * here). A success marks the outbox record sent; every outcome is counted on the connection's
 * health (provider failures toward a pause, a success clears them). What a failure does to the
 * outbox record is the caller's to decide (fail it, or wait and retry).
 */
export async function deliver(
  context: DeliveryContext,
  connection: SendingConnection,
  outboxId: number,
  message: OutgoingMessage,
): Promise<{ messageId: string }> {
  let messageId: string
  try {
    const transporter = await context.transports.get(connection)
    // Only these fields reach nodemailer: no caller-supplied headers, envelope, attachments or raw source.
    const info = await transporter.sendMail({
      from: connection.from_address,
      to: message.to,
      cc: message.cc,
      bcc: message.bcc,
      subject: oneLine(message.subject),
      text: message.text,
      html: message.html,
      messageId: message.messageId,
      disableFileAccess: true,
      disableUrlAccess: true,
    })
    messageId = info.messageId
  } catch (error) {
    const kind = classifySmtpError(error)
    const reason = smtpReason(error)
    if (kind !== 'rejected' || isAuthFailure(error)) {
      const { paused } = await recordProviderFailure(context.sql, connection.id)
      if (paused)
        context.log.warn({ connectionId: connection.id, reason }, 'connection paused after repeated failures')
    }
    context.log.warn(
      { outboxId, connectionId: connection.id, accountId: connection.account_id, kind, reason },
      'SMTP attempt failed',
    )
    throw new DeliveryError(kind, reason, isPermanentRefusal(error))
  }
  // Outside the SMTP error handling: the message is out, so a failure to record it is not a
  // failed delivery. It surfaces as an unexpected error and the attempt's lease settles it.
  await recordDelivered(context.sql, outboxId, connection.id, messageId)
  context.metrics.email('sent', connection.id)
  return { messageId }
}
