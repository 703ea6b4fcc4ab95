import { createHash } from 'node:crypto'
import { selectConnection } from '../connections/selection.ts'
import { recordAttempt, recordReservation, settleAttempts } from '../db/outbox.ts'
import { AppError } from '../errors.ts'
import type { Caller } from '../keys/caller.ts'
import { LimitReached } from '../quota/limit-reached.ts'
import { type Reservation, release, reserve } from '../quota/reservations.ts'
import { delivered, type RecipientOutcome } from '../smtp/outcome.ts'
import { attemptLine, deliver, type SendContext } from './deliver.ts'
import type { EmailRequest } from './email-request.ts'
import { type AttemptRecord, attemptByIdempotencyKey, outboxMessage } from './outbox.ts'
import { envelopeOf, notDelivered, outcomeText } from './recipients.ts'

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
  replayed?: true
}

const SENT = 'Email sent successfully'
/** Provider push-back rarely says how long to wait; a minute is a polite default. */
const PUSHBACK_RETRY_AFTER_SECONDS = 60

class KeyTaken extends Error {}

/**
 * POST /send after validation: idempotency, connection selection, daily limit, quota, pacing,
 * then SMTP, in the rulings' order. Units are reserved with the outbox record in one transaction
 * before the SMTP attempt and given back if nothing was sent.
 */
export async function sendNow(
  context: SendContext,
  caller: Caller,
  request: EmailRequest,
  idempotencyKey: string | undefined,
): Promise<SendResult> {
  const { sql } = context
  const keyHash = idempotencyKey ? createHash('sha256').update(idempotencyKey).digest() : null
  if (keyHash) {
    const earlier = await attemptByIdempotencyKey(sql, caller.accountId, keyHash)
    if (earlier) return replay(earlier)
  }
  const connection = await selectConnection(sql, caller, request.from, 'now')
  const message = outboxMessage(caller, connection, request)
  const bodies = { text_body: request.text_body, html_body: request.html_body }
  let attempt: { id: number; reservation: Reservation }
  try {
    attempt = await sql.begin(async (tx) => {
      // Issued together, so postgres.js pipelines them, and run in this order: the key is claimed
      // before any limit is touched. A concurrent request with the same key waits on the unique
      // index, then replays or finds it in flight, and never sees a 429 caused by the very
      // message it duplicates (a taken key wins over whatever the limits said).
      const [claim, reserved] = await Promise.allSettled([
        recordAttempt(tx, { ...message, ...bodies, idempotencyKey: keyHash }),
        reserve(tx, caller.plan, caller.accountId, connection),
      ])
      if (claim.status === 'rejected') throw claim.reason
      if (claim.value === undefined) throw new KeyTaken()
      if (reserved.status === 'rejected') throw reserved.reason
      await recordReservation(tx, claim.value, reserved.value)
      return { id: claim.value, reservation: reserved.value }
    })
  } catch (error) {
    if (!(error instanceof KeyTaken) || !keyHash) throw error
    // A concurrent request with the same key got there first; ours took nothing (rolled back).
    const earlier = await attemptByIdempotencyKey(sql, caller.accountId, keyHash)
    if (!earlier) throw error
    return replay(earlier)
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
      bcc: request.bcc,
      envelope,
      subject: request.subject,
      text: request.text_body,
      html: request.html_body,
    },
    () => PUSHBACK_RETRY_AFTER_SECONDS * 1000,
  )
  const line = attemptLine(1, outcome)
  const error = outcomeText(outcome.recipients)
  if (delivered(outcome)) {
    // Sent to the ones the server took. A record with a recipient refused is not `sent`: that
    // status means every recipient got the message.
    const status = error === null ? 'sent' : 'failed'
    const settlement = { status, error } as const
    await settleAttempts(sql, connection.id, [
      { id: attempt.id, line, recipients: outcome.recipients, settlement },
    ])
    context.metrics.email(status, connection.id)
    return sentResult(attempt.id, connection.from_address, message.messageId, outcome.recipients)
  }
  // Nothing sent: "wait and retry" when the provider pushed back or only deferred the
  // recipients (the retry may reuse its key, as for the limits checked before SMTP); otherwise
  // the cause needs changing first.
  const wait =
    outcome.pushback !== undefined ||
    (outcome.unreachable === undefined && outcome.recipients.every((r) => r.status === 'deferred'))
  const reason = outcome.pushback ?? error ?? 'The SMTP server did not take the message'
  // One transaction: the failure is recorded if and only if the units are given back.
  await sql.begin((tx) =>
    Promise.all([
      settleAttempts(tx, connection.id, [
        {
          id: attempt.id,
          line,
          recipients: outcome.recipients,
          settlement: { status: 'failed', error: reason, releaseKey: wait },
        },
      ]),
      release(tx, caller.accountId, connection.id, attempt.reservation),
    ]),
  )
  context.metrics.email('failed', connection.id)
  if (wait) {
    throw new LimitReached(
      PUSHBACK_RETRY_AFTER_SECONDS * 1000,
      'RATE_LIMITED',
      `The SMTP server asked to slow down: ${reason}`,
      { retryAfter: PUSHBACK_RETRY_AFTER_SECONDS },
    )
  }
  throw new AppError('INTERNAL_ERROR', reason)
}

/** A send the server took: every recipient, or some with the others' refusals said. */
function sentResult(
  outboxId: number,
  from: string,
  messageId: string,
  outcomes: RecipientOutcome[],
): SendResult {
  const missed = notDelivered(outcomes)
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
    message: `Email sent to ${outcomes.length - missed.length} of ${outcomes.length} recipients; refused: ${refusals}`,
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
  if (earlier.status === 'sent' || earlier.recipients?.some((r) => r.status === 'accepted')) {
    const original = sentResult(earlier.id, earlier.from, earlier.message_id, earlier.recipients ?? [])
    return { ...original, replayed: true }
  }
  return {
    success: false,
    outboxId: earlier.id,
    from: earlier.from,
    message: earlier.error ?? 'The earlier request with this Idempotency-Key failed',
    replayed: true,
  }
}
