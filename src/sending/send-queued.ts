import type { QueueConnection } from '../connections/selection.ts'
import type { Db } from '../db/sql.ts'
import { LimitReached } from '../quota/limit-reached.ts'
import { type Reservation, release, reserve } from '../quota/reservations.ts'
import { DeliveryError, deliver, type SendContext } from './deliver.ts'
import { recordReservation } from './outbox.ts'
import { backOffConnection, type ClaimedMessage, claimNext, failQueued, requeue } from './queue.ts'
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
  try {
    await deliver(context, connection, message.id, message.message)
  } catch (error) {
    if (!(error instanceof DeliveryError)) throw error
    await release(context.sql, connection.account_id, connection.id, reservation)
    return settleFailure(context.sql, connection.id, message, error, policy)
  }
  return { kind: 'handled' }
}

/**
 * Fails, or queues again with a back-off. Push-back is the provider asking the connection to
 * slow down: the whole connection's queue waits as long as the message does, in every process.
 */
async function settleFailure(
  sql: Db,
  connectionId: number,
  message: ClaimedMessage,
  error: DeliveryError,
  policy: RetryPolicy,
): Promise<QueuedSendOutcome> {
  if (error.permanent) {
    await failQueued(sql, message.id, error.reason, true)
    return { kind: 'handled' }
  }
  if (error.kind === 'pushback') {
    const waitMs = policy.pushbackDelayMs(message.deferrals + 1)
    await requeue(sql, message.id, waitMs, error.reason, 'deferrals')
    await backOffConnection(sql, connectionId, waitMs)
    return { kind: 'blocked', waitMs }
  }
  const failures = message.failures + 1
  if (failures >= policy.maxFailures) {
    await failQueued(sql, message.id, `Gave up after ${failures} failed attempts: ${error.reason}`, true)
  } else {
    await requeue(sql, message.id, policy.failureDelayMs(failures), error.reason, 'failures')
  }
  return { kind: 'handled' }
}
