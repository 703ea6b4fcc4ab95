import { createHash } from 'node:crypto'
import { AppError } from '../app-error.ts'
import { chosenConnection, connectionRef } from '../connections/selection.ts'
import type { SendingConnection } from '../db/connections.ts'
import { recordMessageFields } from '../db/message-fields.ts'
import { settleAttempts } from '../db/outbox-records.ts'
import type { AttemptRecord, OutboxMessage, Reservation } from '../db/outbox-types.ts'
import { type CachedRoute, cachedRoute, findAndCache } from '../fast-path/cached-route.ts'
import type { RequestCaller } from '../fast-path/caller-cache.ts'
import type { FastPath } from '../fast-path/fast-path.ts'
import type { Caller } from '../keys/caller.ts'
import { LimitReached } from '../quota/limit-reached.ts'
import { recordGivingBack } from '../quota/reservations.ts'
import { reservationOf, withLimits } from '../quota/send-reservation.ts'
import type { AttemptOutcome, RecipientOutcome } from '../smtp/outcome.ts'
import {
  leaveOutSuppressed,
  type SuppressedAddress,
  suppressedIn,
  suppressedRefusal,
  withoutSuppressed,
  withSuppressedSaid,
} from '../suppressions/applying.ts'
import { attemptByIdempotencyKey, outboxMessage, settledIfDead } from './attempts.ts'
import { attemptLine, deliver, type SendContext } from './deliver.ts'
import type { EmailRequest } from './email-request.ts'
import { outgoingExtras, sentFields } from './message-extras.ts'
import { afterAttempt, envelopeOf, notDelivered, serverTook } from './recipients.ts'
import { settlementOf } from './settlement.ts'

export interface RefusedRecipient {
  email: string
  /** The server's reply for this recipient. */
  reply: string
  /** Refused for good (5xx), rather than for now (4xx: a later send may be taken). */
  permanent: boolean
}

export interface SendResult {
  success: boolean
  messageId?: string
  outboxId: number
  from: string
  message: string
  /** The recipients the server refused while it took the message for the others. */
  refusedRecipients?: RefusedRecipient[]
  /** The recipients left out because the account suppressed them. */
  suppressedRecipients?: SuppressedAddress[]
  replayed?: true
}

const SENT = 'Email sent successfully'
/** Provider push-back rarely says how long to wait; a minute is a polite default. */
const PUSHBACK_RETRY_AFTER_SECONDS = 60

/** What a request asks its attempt's statement: its message and its key's digest. */
interface AttemptAsked {
  request: EmailRequest
  keyHash: Buffer | null
}

/** An attempt recorded, its units taken, ready for SMTP. */
interface Claimed {
  caller: Caller
  connection: SendingConnection
  message: OutboxMessage
  attempt: { id: number; reservation: Reservation }
}

/**
 * POST /send after validation: idempotency, connection selection, daily limit, quota, pacing,
 * then SMTP, in the contract's order. Three statements, each shared with the requests then
 * waiting for the same (src/fast-path/send-statements.ts): what the request finds (its key's
 * earlier attempt and its connection), its attempt claimed with its units reserved (given back
 * if nothing was sent), and the attempt settled. With its caller and connection cached from an
 * earlier send, two: the attempt's statement rechecks they still hold (src/fast-path/README.md).
 * The attempt's statement also refuses a request with a recipient suppressed for all mail,
 * having recorded nothing; only then are the suppressions read and the request sent without them.
 */
export async function sendNow(
  context: SendContext,
  requestCaller: RequestCaller,
  request: EmailRequest,
  idempotencyKey: string | undefined,
): Promise<SendResult> {
  const everyone = { envelope: envelopeOf(request), skipped: [] }
  const sent = await sendUnsuppressed(context, requestCaller, request, idempotencyKey, everyone)
  return sent === 'suppressed' ? sendLeavingOut(context, requestCaller, request, idempotencyKey) : sent
}

/** POST /send of a request some of whose recipients are suppressed for all mail. */
async function sendLeavingOut(
  context: SendContext,
  requestCaller: RequestCaller,
  request: EmailRequest,
  idempotencyKey: string | undefined,
): Promise<SendResult> {
  const left = await leaveOutSuppressed(context.sql, requestCaller.caller.accountId, request)
  if (left.everyone) {
    // An earlier request under the key is answered as it was, whatever was suppressed since.
    const earlier =
      idempotencyKey && (await replayOf(context.sql, await requestCaller.check(), idempotencyKey))
    if (earlier) return earlier
    throw await suppressedRefusal(requestCaller, left.suppressed)
  }
  // The left-out recipients go on the record too, settled with the others: no statement of their own.
  const envelope = envelopeOf(request)
  const leftOut = { envelope, skipped: withoutSuppressed(envelope, left.suppressed).skipped }
  const result = await sendUnsuppressed(context, requestCaller, left.request, idempotencyKey, leftOut)
  // Refused again: an address was suppressed since the read above, and is left out too.
  if (result === 'suppressed') return sendLeavingOut(context, requestCaller, request, idempotencyKey)
  return result.replayed ? result : withSuppressedSaid(result, left.suppressed)
}

/** The answer to an earlier request under the key, if there is one. */
async function replayOf(sql: SendContext['sql'], caller: Caller, idempotencyKey: string) {
  const keyHash = createHash('sha256').update(idempotencyKey).digest()
  const earlier = await attemptByIdempotencyKey(sql, caller.accountId, keyHash)
  return earlier ? replay(earlier) : undefined
}

/**
 * The request sent to its recipients, its attempt recorded first; `suppressed` when a recipient
 * is suppressed for all mail (nothing recorded, nothing taken).
 */
async function sendUnsuppressed(
  context: SendContext,
  requestCaller: RequestCaller,
  request: EmailRequest,
  idempotencyKey: string | undefined,
  leftOut: LeftOut,
): Promise<SendResult | 'suppressed'> {
  const { sql } = context
  const keyHash = idempotencyKey ? createHash('sha256').update(idempotencyKey).digest() : null
  const asked = { request, keyHash }
  const claimed =
    (requestCaller.checked ? undefined : await claimOnCachedRoute(context.fastPath, requestCaller, asked)) ??
    (await claimAsFound(context, await requestCaller.check(), asked))
  if (claimed === 'suppressed') return claimed
  if ('replay' in claimed) return replay(claimed.replay)
  const { caller, connection, message, attempt } = claimed
  if (request.extras || request.tags) {
    const fields = request.extras ? sentFields(request.extras) : {}
    await recordMessageFields(sql, attempt.id, { ...fields, ...(request.tags && { tags: request.tags }) })
  }
  const envelope = envelopeOf(request)
  const outcome = await deliver(
    context,
    connection,
    {
      outboxId: attempt.id,
      messageId: message.messageId,
      to: request.to,
      cc: request.cc,
      envelope,
      subject: request.subject,
      text: request.text_body,
      html: request.html_body,
      ...outgoingExtras(request.extras),
      callerWaits: true,
    },
    { pushback: PUSHBACK_RETRY_AFTER_SECONDS * 1000, unreachable: PUSHBACK_RETRY_AFTER_SECONDS * 1000 },
  )
  const line = attemptLine(1, outcome)
  const settled = settlementOf(withLeftOut(outcome, leftOut), { path: 'send' })
  const { recipients, settlement, hardBounces } = settled
  const attemptSettled = { id: attempt.id, line, recipients, settlement, hardBounces }
  if (!settled.giveBack) {
    await context.fastPath.statements.settle(connection.id, attemptSettled)
    context.metrics.email(settled.settlement.status, connection.id)
    return sentResult(attempt.id, connection.from_address, message.messageId, recipients)
  }
  const units = {
    accountId: caller.accountId,
    connectionId: connection.id,
    reservations: [attempt.reservation],
  }
  await recordGivingBack(sql, units, (tx) => [settleAttempts(tx, connection.id, [attemptSettled])])
  context.metrics.email('failed', connection.id)
  const { error: reason, releaseKey: wait } = settled.settlement
  if (wait) {
    throw new LimitReached(PUSHBACK_RETRY_AFTER_SECONDS * 1000, 'RATE_LIMITED', waitText(outcome, reason), {
      retryAfter: PUSHBACK_RETRY_AFTER_SECONDS,
    })
  }
  throw new AppError('INTERNAL_ERROR', reason)
}

/** Every recipient of the request as sent, in its order, and the outcomes of those suppressed. */
interface LeftOut {
  envelope: string[]
  skipped: RecipientOutcome[]
}

/** The attempt's outcome with the recipients it never tried because they are suppressed. */
function withLeftOut(outcome: AttemptOutcome, { envelope, skipped }: LeftOut): AttemptOutcome {
  if (skipped.length === 0) return outcome
  return { ...outcome, recipients: afterAttempt(envelope, null, [...outcome.recipients, ...skipped]) }
}

/**
 * Why a send that took nothing may be tried again: the provider asked the connection to slow
 * down, or it only deferred the recipients (a greylisting or lookup failure, say), which is not
 * the same and is not said as if it were.
 */
function waitText(outcome: AttemptOutcome, reason: string): string {
  if (outcome.pushback !== undefined) return `The SMTP server asked to slow down: ${reason}`
  const [only] = outcome.recipients
  const who = outcome.recipients.length === 1 && only ? `the recipient ${only.address}` : 'every recipient'
  return `The SMTP server deferred ${who} for now (try again later): ${reason}`
}

/**
 * The attempt recorded on what earlier requests read (the cached caller, the cached connection
 * its request names), if it all still holds; undefined for anything else, which reading it all
 * again answers (an earlier attempt under the key, a connection that cannot send now).
 */
async function claimOnCachedRoute(
  fastPath: FastPath,
  requestCaller: RequestCaller,
  asked: AttemptAsked,
): Promise<Claimed | 'suppressed' | undefined> {
  const route = cachedRoute(fastPath, requestCaller, asked.request.from, 'now')
  if (!route) return undefined
  const claimed = await claimThrough(fastPath, route.caller, route.connection, asked, route)
  if (claimed === 'suppressed') return claimed
  // A key taken: what it holds is read in the findings' rounds, as any replay's.
  return typeof claimed === 'string' ? undefined : claimed
}

/** The attempt recorded on what the request finds (one statement), or the earlier one to replay. */
async function claimAsFound(
  { sql, fastPath }: SendContext,
  caller: Caller,
  asked: AttemptAsked,
): Promise<Claimed | 'suppressed' | { replay: AttemptRecord }> {
  const { request, keyHash } = asked
  const ref = connectionRef(caller, request.from)
  const found = await findAndCache(fastPath, { accountId: caller.accountId, key: keyHash, ref })
  if (keyHash && found.earlier) {
    const earlier = await settledIfDead(sql, caller.accountId, keyHash, found.earlier)
    if (earlier) return { replay: earlier }
  }
  const connection = chosenConnection(caller, request.from, found.connection, 'now')
  const claimed = await claimThrough(fastPath, caller, connection, asked)
  if (typeof claimed !== 'string' || claimed === 'suppressed') return claimed
  // A concurrent request with the same key got there first; ours took nothing.
  const earlier = keyHash && (await attemptByIdempotencyKey(sql, caller.accountId, keyHash))
  if (!earlier) throw new Error('the idempotency key was taken, but no attempt holds it')
  return { replay: earlier }
}

/**
 * The request's message through `connection`, its attempt claimed in the connection's next
 * round of attempts, going ahead on `route` when it was cached (see reservationOf; the cache is
 * told whether its recheck held). The key is claimed before any limit is touched (one statement). A concurrent
 * request with the same key waits on the unique index, then replays or finds it in flight, and
 * never sees a 429 caused by the very message it duplicates (a taken key wins over whatever the
 * limits said).
 */
async function claimThrough(
  fastPath: FastPath,
  caller: Caller,
  connection: SendingConnection,
  { request, keyHash }: AttemptAsked,
  route?: CachedRoute,
): Promise<Claimed | 'taken' | 'stale' | 'suppressed'> {
  const message = outboxMessage(caller, connection, request)
  const result = await fastPath.statements.attempt(
    withLimits(caller.plan, connection, {
      ...message,
      text_body: request.text_body,
      html_body: request.html_body,
      idempotencyKey: keyHash,
      suppressible: true,
      ...(route === undefined ? {} : { recheck: route.recheck }),
    }),
  )
  route?.rechecked(result.refused === 'stale')
  const attempt = reservationOf(result, caller.plan, caller.accountId, connection)
  return typeof attempt === 'string' ? attempt : { caller, connection, message, attempt }
}

/** A send the server took: every recipient, or some with the others' refusals said. */
function sentResult(
  outboxId: number,
  from: string,
  messageId: string,
  outcomes: RecipientOutcome[],
): SendResult {
  // The suppressed were never handed to the server: the answer names them on its own.
  const tried = outcomes.filter((r) => r.status !== 'suppressed')
  const missed = notDelivered(tried)
  if (missed.length === 0) return { success: true, messageId, outboxId, from, message: SENT }
  const refusedRecipients = missed.map((r) => ({
    email: r.address,
    reply: r.reply ?? 'not delivered',
    permanent: r.status === 'refused',
  }))
  const refusals = refusedRecipients.map((r) => `${r.email} (${r.reply})`).join('; ')
  return {
    success: true,
    messageId,
    outboxId,
    from,
    message: `Email sent to ${tried.length - missed.length} of ${tried.length} recipients; refused: ${refusals}`,
    refusedRecipients,
  }
}

function replay(earlier: AttemptRecord): SendResult {
  if (earlier.in_flight) {
    throw new AppError(
      'IDEMPOTENCY_KEY_IN_FLIGHT',
      'An earlier request with this Idempotency-Key is still in progress',
    )
  }
  // The first request succeeded when the server took the message, if only for some recipients.
  if (earlier.status === 'sent' || earlier.recipients?.some(serverTook)) {
    const outcomes = earlier.recipients ?? []
    const original = sentResult(earlier.id, earlier.from, earlier.message_id, outcomes)
    return { ...withSuppressedSaid(original, suppressedIn(outcomes)), replayed: true }
  }
  return {
    success: false,
    outboxId: earlier.id,
    from: earlier.from,
    message: earlier.error ?? 'The earlier request with this Idempotency-Key failed',
    replayed: true,
  }
}
