import { setTimeout as sleep } from 'node:timers/promises'
import { listUnsubscribeHeaders } from '../audiences/unsubscribe.ts'
import type { QueueConnection } from '../db/connections.ts'
import { holdQueue } from '../db/connections.ts'
import { isDriverConnectionFault } from '../db/driver-faults.ts'
import {
  type ClaimedMessage,
  claimNext,
  recordReservation,
  type Settlement,
  settleAttempt,
} from '../db/outbox.ts'
import type { Db } from '../db/sql.ts'
import { withRequestId } from '../log.ts'
import { LimitReached } from '../quota/limit-reached.ts'
import { type Reservation, release, reserve } from '../quota/reservations.ts'
import { attemptLine, deliver, type OutgoingMessage, type SendContext } from '../sending/deliver.ts'
import { afterAttempt, envelopeOf, outcomeText, stillToTry } from '../sending/recipients.ts'
import { type AttemptOutcome, delivered, type RecipientOutcome } from '../smtp/outcome.ts'
import type { BatchContents } from './batch-contents.ts'
import type { Claimant } from './liveness.ts'
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
 * Sends the connection's next due queued message through the one delivery path, to the
 * recipients still to be tried (everyone at first, the deferred ones later, under the same
 * Message-ID). Claiming it and reserving its units (daily limit, quota, pacing: the same counters
 * as POST /send) happen in one transaction: a limit that refuses rolls the claim back, so waiting
 * never counts as an attempt. Afterwards the message is sent, failed for good, or queued again.
 */
export async function sendNextQueued(
  context: SendContext,
  connection: QueueConnection,
  claimant: Claimant,
  policy: RetryPolicy,
  contents: BatchContents,
): Promise<QueuedSendOutcome> {
  let claimed: { message: ClaimedMessage; content: Content; reservation: Reservation }
  let held: number | undefined
  try {
    claimed = await context.sql.begin(async (tx) => {
      // Issued together, so postgres.js pipelines them: one round trip instead of two.
      const [reservation, message] = await Promise.all([
        reserve(tx, connection.plan, connection.account_id, connection),
        claimNext(tx, connection.id, claimant.id),
      ])
      if (!message) throw new NothingDue()
      // Held before the claim commits, so that this process's sweep never takes it for lost.
      held = message.id
      claimant.messages.hold(held)
      // Rendered before the claim commits, so that a failure to read the batch's content leaves
      // the message queued rather than held; read on the claim's own connection, since a lane
      // holding one while it waits for a second could, with every lane doing so, starve the pool.
      const [content] = await Promise.all([
        contentOf(tx, message, contents),
        recordReservation(tx, message.id, reservation),
      ])
      return { message, content, reservation }
    })
  } catch (error) {
    // Rolled back, or committed with the answer lost: either way not sent by this lane.
    if (held !== undefined) claimant.messages.letGo(held)
    if (error instanceof LimitReached) return { kind: 'blocked', waitMs: error.waitMs }
    if (error instanceof NothingDue) return { kind: 'idle' }
    throw error
  }
  try {
    // Logged under the id of the request that queued it.
    return await withRequestId(claimed.message.request_id, () =>
      sendClaimed(context, connection, claimed.message, claimed.content, claimed.reservation, policy),
    )
  } finally {
    claimant.messages.letGo(claimed.message.id)
  }
}

/** What a message says: its own subject and bodies, or a batch recipient's, rendered now. */
type Content = Pick<OutgoingMessage, 'subject' | 'text' | 'html'>

async function contentOf(db: Db, message: ClaimedMessage, contents: BatchContents): Promise<Content> {
  const own =
    message.content_id === null
      ? { subject: message.subject ?? '', text_body: message.text_body, html_body: message.html_body }
      : await contents.render(db, message.content_id, message.payload)
  return {
    subject: own.subject,
    ...(own.text_body == null ? {} : { text: own.text_body }),
    ...(own.html_body == null ? {} : { html: own.html_body }),
  }
}

/** Sends a claimed message and records what became of it. */
async function sendClaimed(
  context: SendContext,
  connection: QueueConnection,
  message: ClaimedMessage,
  content: Content,
  reservation: Reservation,
  policy: RetryPolicy,
): Promise<QueuedSendOutcome> {
  const envelope = envelopeOf({
    to: message.to_addresses,
    cc: message.cc_addresses,
    bcc: message.bcc_addresses,
  })
  const outcome = await deliver(
    context,
    connection,
    {
      outboxId: message.id,
      messageId: message.message_id,
      to: message.to_addresses,
      cc: message.cc_addresses,
      bcc: message.bcc_addresses,
      envelope: stillToTry(envelope, message.recipients),
      ...content,
      ...(message.reply_to === null ? {} : { replyTo: message.reply_to }),
      ...listUnsubscribe(message.unsubscribe_url),
    },
    (kind) =>
      kind === 'pushback'
        ? policy.pushbackDelayMs(message.deferrals + 1)
        : policy.failureDelayMs(message.failures + 1),
  )
  const recipients = afterAttempt(envelope, message.recipients, outcome.recipients)
  const settlement = settlementOf(message, outcome, recipients, policy)
  // A message counts once: its units are spent by the attempt that first delivers it, and given
  // back by every other. Given back if and only if the attempt is recorded: one transaction
  // (one statement alone, on the common path of a message delivered at once).
  const spent = delivered(outcome) && !message.recipients?.some((r) => r.status === 'accepted')
  const holds = settlement.status === 'queued' && outcome.pushback !== undefined
  const settle = (db: Db) => [
    settleAttempt(
      db,
      message.id,
      connection.id,
      attemptLine(message.attempts, outcome),
      recipients,
      settlement,
    ),
    ...(holds ? [holdQueue(db, connection.id, settlement.delayMs)] : []),
    ...(spent ? [] : [release(db, connection.account_id, connection.id, reservation)]),
  ]
  await throughConnectionLoss(() =>
    spent && !holds ? Promise.all(settle(context.sql)) : context.sql.begin((tx) => Promise.all(settle(tx))),
  )
  context.metrics.email(settlement.status === 'queued' ? 'deferred' : settlement.status, connection.id)
  const earlier = message.attempts - 1
  if (settlement.status === 'sent' && earlier > 0) {
    context.log.info(
      { outboxId: message.id, connectionId: connection.id, accountId: connection.account_id, earlier },
      `sent after ${earlier} earlier attempt${earlier === 1 ? '' : 's'} failed or were deferred`,
    )
  }
  // Push-back is the provider asking the connection to slow down: its whole queue waits as long
  // as the message does, in every process.
  if (holds) return { kind: 'blocked', waitMs: settlement.delayMs }
  return { kind: 'handled' }
}

/** Waits between tries of recording an outcome while the database is out of reach: about two minutes in all. */
const RECORD_RETRY_MS = [500, 1_000, 2_000, 4_000, 8_000, 15_000, 30_000, 30_000, 30_000]

/**
 * Records an attempt's outcome, trying again while the database connection is lost: the message
 * was handed to SMTP, and an outcome not recorded would have it sent again. (Should the database
 * have committed a try whose answer was lost, the retry adds a second line to its history.)
 */
async function throughConnectionLoss<T>(record: () => Promise<T>): Promise<T> {
  for (const waitMs of RECORD_RETRY_MS) {
    try {
      return await record()
    } catch (error) {
      if (!isDriverConnectionFault(error)) throw error
      await sleep(waitMs)
    }
  }
  return record()
}

function listUnsubscribe(url: string | null) {
  const headers = listUnsubscribeHeaders(url)
  return headers === undefined ? {} : { headers }
}

/**
 * Ended when no recipient is left to try: `sent` when every one got the message, `failed`
 * (with each one's reply) otherwise. Recipients still deferred are tried again: after a
 * push-back on the push-back schedule, which never runs out by itself; after anything else on
 * the failure schedule, up to its number of tries. Either way, not past the queue lifetime.
 */
function settlementOf(
  message: ClaimedMessage,
  outcome: AttemptOutcome,
  recipients: RecipientOutcome[],
  policy: RetryPolicy,
): Settlement {
  const deferred = recipients.some((r) => r.status === 'deferred')
  if (!deferred) {
    const error = outcomeText(recipients)
    return { status: error === null ? 'sent' : 'failed', error }
  }
  const last = outcome.pushback ?? outcome.unreachable ?? outcomeText(recipients) ?? 'deferred'
  const pushback = outcome.pushback !== undefined
  const counter = pushback ? 'deferrals' : 'failures'
  const failures = message.failures + (pushback ? 0 : 1)
  const delayMs = pushback ? policy.pushbackDelayMs(message.deferrals + 1) : policy.failureDelayMs(failures)
  if (!pushback && failures >= policy.maxFailures) {
    return {
      status: 'failed',
      error: outcomeText(recipients, `Gave up after ${failures} failed attempts: `),
      counter,
    }
  }
  if (message.age_ms + delayMs > policy.maxAgeMs) {
    const error = outcomeText(recipients, `Still deferred after ${hours(message.age_ms)}: `)
    return { status: 'failed', error, counter }
  }
  return { status: 'queued', error: last, delayMs, counter }
}

function hours(ms: number): string {
  const h = ms / 3_600_000
  return h >= 1 ? `${Math.round(h)} hours` : `${Math.round(ms / 1000)} seconds`
}
