import { createHash } from 'node:crypto'
import { selectConnection } from '../connections/selection.ts'
import { markAttemptFailed, recordAttempt, recordReservation } from '../db/outbox.ts'
import { AppError } from '../errors.ts'
import type { Caller } from '../keys/caller.ts'
import { LimitReached } from '../quota/limit-reached.ts'
import { type Reservation, release, reserve } from '../quota/reservations.ts'
import { DeliveryError, deliver, type SendContext } from './deliver.ts'
import type { EmailRequest } from './email-request.ts'
import { type AttemptRecord, attemptByIdempotencyKey, outboxMessage } from './outbox.ts'

export interface SendResult {
  success: boolean
  messageId?: string
  outboxId: number
  from: string
  message: string
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
  let attempt: { id: number; reservation: Reservation }
  try {
    attempt = await sql.begin(async (tx) => {
      // Issued together, so postgres.js pipelines them, and run in this order: the key is claimed
      // before any limit is touched. A concurrent request with the same key waits on the unique
      // index, then replays or finds it in flight, and never sees a 429 caused by the very
      // message it duplicates (a taken key wins over whatever the limits said).
      const [claim, reserved] = await Promise.allSettled([
        recordAttempt(tx, { ...message, idempotencyKey: keyHash }),
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

  try {
    const sent = await deliver(context, connection, attempt.id, {
      messageId: message.messageId,
      to: request.to,
      cc: request.cc,
      bcc: request.bcc,
      subject: request.subject,
      text: request.text_body,
      html: request.html_body,
    })
    return {
      success: true,
      messageId: sent.messageId,
      outboxId: attempt.id,
      from: connection.from_address,
      message: SENT,
    }
  } catch (error) {
    // Anything but a failed delivery (say, the database lost after the server accepted the
    // message) leaves the attempt as it is: its outcome is unknown and its lease settles it.
    if (!(error instanceof DeliveryError)) throw error
    context.metrics.email('failed', connection.id)
    const pushback = error.kind === 'pushback'
    // One transaction: the failure is recorded if and only if the units are given back. A 429
    // means "wait and retry": the retry may reuse its key, as for the limits checked before SMTP.
    await sql.begin((tx) =>
      Promise.all([
        markAttemptFailed(tx, attempt.id, error.reason, pushback),
        release(tx, caller.accountId, connection.id, attempt.reservation),
      ]),
    )
    if (pushback) {
      throw new LimitReached(
        PUSHBACK_RETRY_AFTER_SECONDS * 1000,
        'RATE_LIMITED',
        `The SMTP server asked to slow down: ${error.reason}`,
        { retryAfter: PUSHBACK_RETRY_AFTER_SECONDS },
      )
    }
    throw new AppError('INTERNAL_ERROR', error.reason)
  }
}

function replay(earlier: AttemptRecord): SendResult {
  if (earlier.in_flight) {
    throw new AppError(
      'IDEMPOTENCY_KEY_IN_FLIGHT',
      'An earlier request with this Idempotency-Key is still in progress',
    )
  }
  if (earlier.status === 'sent') {
    return {
      success: true,
      messageId: earlier.message_id,
      outboxId: earlier.id,
      from: earlier.from,
      message: SENT,
      replayed: true,
    }
  }
  return {
    success: false,
    outboxId: earlier.id,
    from: earlier.from,
    message: earlier.error ?? 'The earlier request with this Idempotency-Key failed',
    replayed: true,
  }
}
