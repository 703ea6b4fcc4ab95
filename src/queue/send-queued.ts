import { listUnsubscribeHeaders } from '../audiences/unsubscribe.ts'
import { waitForAnswer } from '../connections/health.ts'
import type { QueueConnection } from '../db/connections.ts'
import { holdQueue } from '../db/connections.ts'
import { throughConnectionFaults } from '../db/driver-faults.ts'
import { settleAttempts } from '../db/outbox-records.ts'
import type { AttemptSettlement, Reservation } from '../db/outbox-types.ts'
import { type ClaimedMessage, claimDue, unclaim } from '../db/queue.ts'
import type { Db } from '../db/sql.ts'
import { Rounds } from '../fast-path/rounds.ts'
import { withRequestId } from '../log.ts'
import { recordGivingBack, sendingLimits } from '../quota/reservations.ts'
import {
  attemptLine,
  type Delivery,
  deliver,
  type OutgoingMessage,
  type SendContext,
} from '../sending/deliver.ts'
import { storedExtras } from '../sending/message-extras.ts'
import { envelopeOf, stillToTry } from '../sending/recipients.ts'
import { settlementOf } from '../sending/settlement.ts'
import { withoutSuppressed } from '../suppressions/applying.ts'
import { counted } from '../wording.ts'
import type { BatchContents } from './batch-contents.ts'
import type { Claimant } from './liveness.ts'
import { type RetryPolicy, retryDelayMs } from './retry-policy.ts'

export type QueuedSendOutcome =
  /** Nothing due (or the connection is disabled or paused). */
  | { kind: 'idle' }
  /**
   * The connection must wait `waitMs`: a limit refused (the message was left queued, untouched)
   * or the provider pushed back (the message was queued again for then).
   */
  | { kind: 'blocked'; waitMs: number }
  /**
   * One message was handled: sent, failed, or queued again for later. `recorded` settles once
   * its outcome is in the database: on the common path that is a round of the run's settlements
   * (see laneRounds), which the lane need not wait for before it takes its next message.
   */
  | { kind: 'handled'; recorded: Promise<void> }

/** A message claimed for sending, with its content rendered and where its units were reserved. */
export interface ClaimedQueued {
  message: ClaimedMessage
  content: Content
  reservation: Reservation
}

export type QueuedClaim =
  | Exclude<QueuedSendOutcome, { kind: 'handled' }>
  | { kind: 'claimed'; claimed: ClaimedQueued[] }

/** What a lane gets: one message of its own, or why there is none. */
export type LaneTurn = Exclude<QueuedClaim, { kind: 'claimed' }> | { kind: 'message'; claimed: ClaimedQueued }

/** Records the outcome of an attempt on the common path (see sendClaimed). */
export type Settle = (attempt: AttemptSettlement) => Promise<void>

/**
 * The claims of one queue run's lanes, in rounds (src/fast-path/rounds.ts): one claim for every lane
 * waiting for a message (none claimed for a lane not waiting, so that a run that stops leaves
 * none claimed and unsent). Their outcomes are settled with the others of the connection then
 * ready, POST /send's among them, one statement for those ready together (SendStatements).
 */
export function laneRounds(
  context: SendContext,
  connection: QueueConnection,
  claimant: Claimant,
  contents: BatchContents,
): { next(): Promise<LaneTurn>; settle: Settle } {
  const claims = new Rounds<void, LaneTurn>(async (lanes) => {
    const claim = await claimQueued(context, connection, claimant, lanes.length, contents)
    return lanes.map((_, i): LaneTurn => {
      if (claim.kind !== 'claimed') return claim
      const claimed = claim.claimed[i]
      return claimed ? { kind: 'message', claimed } : { kind: 'idle' }
    })
  })
  const settle: Settle = (attempt) =>
    throughConnectionFaults(() => context.fastPath.statements.settle(connection.id, attempt), RECORD_RETRY_MS)
  return { next: () => claims.do(undefined), settle }
}

/**
 * Claims up to `wanted` of the connection's due queued messages with their units (daily limit,
 * quota, pacing: the same counters as POST /send) in one statement (claimDue): as many as are
 * due and every limit allows. A limit that refuses leaves them untouched, so that waiting never
 * counts as an attempt. The claimed are held by `claimant` as soon as the claim answers: its own
 * sweep leaves a claim younger than a heartbeat alone.
 */
export async function claimQueued(
  context: SendContext,
  connection: QueueConnection,
  claimant: Claimant,
  wanted: number,
  contents: BatchContents,
): Promise<QueuedClaim> {
  const { account_id: accountId, plan } = connection
  const claim = await claimDue(
    context.sql,
    connection.id,
    claimant.id,
    wanted,
    sendingLimits(plan, accountId, connection),
  )
  if (claim === 'none') return { kind: 'idle' }
  if ('refused' in claim) return { kind: 'blocked', waitMs: claim.waitMs }
  const messages = claim.claimed
  for (const { id } of messages) claimant.messages.hold(id)
  const reservations = messages.map((m) => ({ usageDay: m.usage_day, quotaWindow: m.quota_window }))
  try {
    const rendered = await Promise.all(messages.map((message) => contentOf(context.sql, message, contents)))
    const claimed = messages.map((message, i) => ({
      message,
      content: rendered[i] as Content,
      reservation: reservations[i] as Reservation,
    }))
    return { kind: 'claimed', claimed }
  } catch (error) {
    // A batch's content could not be read: the messages go back to the queue with their units,
    // as if never claimed; with the database out of reach, the sweep puts them back instead.
    const units = { accountId, connectionId: connection.id, reservations }
    await recordGivingBack(context.sql, units, (tx) => [
      unclaim(
        tx,
        messages.map((m) => m.id),
      ),
    ]).catch(() => {})
    for (const { id } of messages) claimant.messages.letGo(id)
    throw error
  }
}

/**
 * Sends a claimed message through the one delivery path, to the recipients still to be tried
 * (everyone at first, the deferred ones later, under the same Message-ID); afterwards it is
 * sent, failed for good, or queued again.
 */
export async function sendQueued(
  context: SendContext,
  connection: QueueConnection,
  claimant: Claimant,
  claimed: ClaimedQueued,
  policy: RetryPolicy,
  settle: Settle,
): Promise<QueuedSendOutcome> {
  // Held until its outcome is recorded: until then the process's own sweep must not take it for lost.
  const letGo = () => claimant.messages.letGo(claimed.message.id)
  try {
    // Logged under the id of the request that queued it.
    const outcome = await withRequestId(claimed.message.request_id, () =>
      sendClaimed(context, connection, claimed, policy, settle),
    )
    if (outcome.kind === 'handled') outcome.recorded.then(letGo, letGo)
    else letGo()
    return outcome
  } catch (error) {
    letGo()
    throw error
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

/** Sends a claimed message and records what became of it (settlementOf decides what). */
async function sendClaimed(
  context: SendContext,
  connection: QueueConnection,
  { message, content, reservation }: ClaimedQueued,
  policy: RetryPolicy,
  settle: Settle,
): Promise<QueuedSendOutcome> {
  const envelope = envelopeOf({
    to: message.to_addresses,
    cc: message.cc_addresses,
    bcc: message.bcc_addresses,
  })
  const retry = { failures: message.failures, deferrals: message.deferrals, ageMs: message.age_ms }
  const outcome = await deliverUnsuppressed(context, connection, { message, content }, envelope, {
    pushback: retryDelayMs(policy, retry, 'pushback'),
    unreachable: retryDelayMs(policy, retry, 'failure'),
  })
  const settled = settlementOf(outcome, {
    path: 'queue',
    envelope,
    earlier: message.recipients,
    retry,
    policy,
  })
  const { recipients, settlement, holdQueueMs, probeInMs, hardBounces } = settled
  const line = attemptLine(message.attempts, outcome)
  const attempt = { id: message.id, line, recipients, settlement, hardBounces }
  const countOutcome = () => {
    context.metrics.email(settlement.status === 'queued' ? 'deferred' : settlement.status, connection.id)
    const earlier = message.attempts - 1
    if (settlement.status === 'sent' && earlier > 0) {
      context.log.info(
        { outboxId: message.id, connectionId: connection.id, accountId: connection.account_id, earlier },
        `sent at attempt ${message.attempts}, after ${counted(earlier, 'failed or deferred attempt')}`,
      )
    }
  }
  // The common path, a message delivered at once, is settled with others of the run; anything
  // else is written with its units' give-back in one transaction.
  if (!settled.giveBack && holdQueueMs === undefined && probeInMs === undefined) {
    return { kind: 'handled', recorded: settle(attempt).then(countOutcome) }
  }
  const units = {
    accountId: connection.account_id,
    connectionId: connection.id,
    reservations: settled.giveBack ? [reservation] : [],
  }
  await throughConnectionFaults(
    () =>
      recordGivingBack(context.sql, units, (tx) => [
        settleAttempts(tx, connection.id, [attempt]),
        ...(holdQueueMs === undefined ? [] : [holdQueue(tx, connection.id, holdQueueMs)]),
        ...(probeInMs === undefined ? [] : [waitForAnswer(tx, connection.id, probeInMs)]),
      ]),
    RECORD_RETRY_MS,
  )
  countOutcome()
  if (holdQueueMs !== undefined) return { kind: 'blocked', waitMs: holdQueueMs }
  return { kind: 'handled', recorded: Promise.resolve() }
}

/**
 * Hands the message to SMTP for its recipients still to try, but those the account suppressed,
 * whose outcome says so without any server being asked; no attempt at all when every one is.
 */
async function deliverUnsuppressed(
  context: SendContext,
  connection: QueueConnection,
  { message, content }: Pick<ClaimedQueued, 'message' | 'content'>,
  envelope: string[],
  waits: { pushback: number; unreachable: number },
): Promise<Delivery> {
  const { send, skipped } = withoutSuppressed(stillToTry(envelope, message.recipients), message.suppressed)
  if (send.length === 0) return { recipients: skipped }
  const outcome = await deliver(
    context,
    connection,
    {
      outboxId: message.id,
      messageId: message.message_id,
      to: message.to_addresses,
      cc: message.cc_addresses,
      envelope: send,
      ...content,
      ...(message.reply_to === null ? {} : { replyTo: message.reply_to }),
      ...listUnsubscribe(message.unsubscribe_url),
      ...storedExtras(message),
      ...(message.raw === null ? {} : { submitted: { raw: message.raw, smtpUtf8: message.needs_smtputf8 } }),
    },
    waits,
  )
  return { ...outcome, recipients: [...outcome.recipients, ...skipped] }
}

/**
 * Waits between tries of recording an outcome while the database connection is lost, about two
 * minutes in all: the message was handed to SMTP, and an outcome not recorded would have it sent
 * again. (Should the database have committed a try whose answer was lost, the retry adds a
 * second line to its history.)
 */
const RECORD_RETRY_MS = [500, 1_000, 2_000, 4_000, 8_000, 15_000, 30_000, 30_000, 30_000]

function listUnsubscribe(url: string | null) {
  const headers = listUnsubscribeHeaders(url)
  return headers === undefined ? {} : { headers }
}
