import type { QueueConnection } from '../db/connections.ts'
import { holdQueue } from '../db/connections.ts'
import { type ClaimedMessage, claimNext, failQueued, recordReservation, requeue } from '../db/outbox.ts'
import type { Db } from '../db/sql.ts'
import { withRequestId } from '../log.ts'
import type { EmailOutcome } from '../metrics.ts'
import { LimitReached } from '../quota/limit-reached.ts'
import { type Reservation, release, reserve } from '../quota/reservations.ts'
import { DeliveryError, deliver, type OutgoingMessage, type SendContext } from '../sending/deliver.ts'
import type { RetryPolicy } from './retry-policy.ts'

export type QueuedSendOutcome =
  /** Nothing due (or the connection is disabled or paused). */
  | { kind: 'idle' }
  /**
   * The connection must wait `waitMs`: a limit refused (the message was left queued, untouched)
   * or the provider pushed back (the message was queued again for then).
   */
  | { kind: 'blocked'; waitMs: number }
  /** One message was handled: sent, failed, or queued again for later. */
  | { kind: 'handled' }

class NothingDue extends Error {}

/**
 * Sends the connection's next due queued message through the one delivery path. Claiming it
 * and reserving its units (daily limit, quota, pacing: the same counters as POST /send) happen
 * in one transaction: a limit that refuses rolls the claim back, so waiting never counts as an
 * attempt, and finding nothing due rolls the reservation back. Afterwards the message is sent,
 * failed for good, or queued again with a back-off.
 */
export async function sendNextQueued(
  context: SendContext,
  connection: QueueConnection,
  processId: string,
  policy: RetryPolicy,
): Promise<QueuedSendOutcome> {
  let claimed: { message: ClaimedMessage; reservation: Reservation }
  try {
    claimed = await context.sql.begin(async (tx) => {
      // Issued together, so postgres.js pipelines them: one round trip instead of two.
      const [reservation, message] = await Promise.all([
        reserve(tx, connection.plan, connection.account_id, connection),
        claimNext(tx, connection.id, processId),
      ])
      if (!message) throw new NothingDue()
      await recordReservation(tx, message.id, reservation)
      return { message, reservation }
    })
  } catch (error) {
    if (error instanceof LimitReached) return { kind: 'blocked', waitMs: error.waitMs }
    if (error instanceof NothingDue) return { kind: 'idle' }
    throw error
  }
  const { message, reservation } = claimed
  // Logged under the id of the request that queued it.
  return withRequestId(message.request_id, async () => {
    try {
      await deliver(context, connection, message.id, outgoing(message))
    } catch (error) {
      if (!(error instanceof DeliveryError)) throw error
      // One transaction: the units are given back if and only if the failure is recorded.
      const { outcome, counted } = await context.sql.begin(async (tx) => {
        const [settled] = await Promise.all([
          settleFailure(tx, connection.id, message, error, policy),
          release(tx, connection.account_id, connection.id, reservation),
        ])
        return settled
      })
      context.metrics.email(counted, connection.id)
      return outcome
    }
    const earlier = message.failures + message.deferrals
    if (earlier > 0) {
      context.log.info(
        { outboxId: message.id, connectionId: connection.id, accountId: connection.account_id, earlier },
        `sent after ${earlier} earlier attempt${earlier === 1 ? '' : 's'} failed or were deferred`,
      )
    }
    return { kind: 'handled' as const }
  })
}

function outgoing(row: ClaimedMessage): OutgoingMessage {
  return {
    messageId: row.message_id,
    to: row.to_addresses,
    cc: row.cc_addresses,
    bcc: row.bcc_addresses,
    subject: row.subject,
    ...(row.text_body === null ? {} : { text: row.text_body }),
    ...(row.html_body === null ? {} : { html: row.html_body }),
  }
}

/**
 * Fails, or queues again with a back-off, and says which for the metrics. Push-back is the
 * provider asking the connection to slow down: the whole connection's queue waits as long as
 * the message does, in every process.
 */
async function settleFailure(
  tx: Db,
  connectionId: number,
  message: ClaimedMessage,
  error: DeliveryError,
  policy: RetryPolicy,
): Promise<{ outcome: QueuedSendOutcome; counted: EmailOutcome }> {
  if (error.permanent) {
    await failQueued(tx, message.id, error.reason)
    return { outcome: { kind: 'handled' }, counted: 'failed' }
  }
  if (error.kind === 'pushback') {
    const waitMs = policy.pushbackDelayMs(message.deferrals + 1)
    await Promise.all([
      requeue(tx, message.id, waitMs, error.reason, 'deferrals'),
      holdQueue(tx, connectionId, waitMs),
    ])
    return { outcome: { kind: 'blocked', waitMs }, counted: 'deferred' }
  }
  const failures = message.failures + 1
  if (failures >= policy.maxFailures) {
    await failQueued(tx, message.id, `Gave up after ${failures} failed attempts: ${error.reason}`)
    return { outcome: { kind: 'handled' }, counted: 'failed' }
  }
  await requeue(tx, message.id, policy.failureDelayMs(failures), error.reason, 'failures')
  return { outcome: { kind: 'handled' }, counted: 'deferred' }
}
