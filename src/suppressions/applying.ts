import { AppError } from '../app-error.ts'
import type { Db } from '../db/sql.ts'
import { suppressedForAll } from '../db/suppressions.ts'
import type { RequestCaller } from '../fast-path/caller-cache.ts'
import type { EmailRequest } from '../sending/email-request.ts'
import { envelopeOf } from '../sending/recipients.ts'
import type { RecipientOutcome } from '../smtp/outcome.ts'
import { isSuppressionReason, type SuppressionReason } from './strength.ts'

/** A recipient the account has suppressed, as the statement that claims its message finds it. */
export interface SuppressedAddress {
  email: string
  reason: SuppressionReason
}

/** What a suppressed recipient's outcome says, in its record and its batch's failures. */
export function suppressedReply(reason: SuppressionReason): string {
  return `suppressed (${reason})`
}

const SUPPRESSED_REPLY = /^suppressed \(([a-z_]+)\)$/

/**
 * The recipients a recorded attempt left out as suppressed, read back from their outcomes, so
 * that a replayed answer names them as the first answer did.
 */
export function suppressedIn(outcomes: readonly RecipientOutcome[]): SuppressedAddress[] {
  return outcomes.flatMap((r) => {
    const reason = r.status === 'suppressed' ? SUPPRESSED_REPLY.exec(r.reply ?? '')?.[1] : undefined
    return reason && isSuppressionReason(reason) ? [{ email: r.address, reason }] : []
  })
}

/**
 * The recipients of an attempt split into those to hand to SMTP and those a suppression keeps
 * from the message, each with its outcome (status `suppressed`), which no server gave.
 */
export function withoutSuppressed(
  recipients: string[],
  suppressed: readonly SuppressedAddress[] | null,
): { send: string[]; skipped: RecipientOutcome[] } {
  const reasons = new Map((suppressed ?? []).map((s) => [s.email.toLowerCase(), s.reason]))
  const send: string[] = []
  const skipped: RecipientOutcome[] = []
  for (const address of recipients) {
    const reason = reasons.get(address.toLowerCase())
    if (reason === undefined) send.push(address)
    else skipped.push({ address, status: 'suppressed', reply: suppressedReply(reason) })
  }
  return { send, skipped }
}

/**
 * A `/send` or `/enqueue` request without its recipients suppressed for all mail, and who they
 * were; `everyone` when that leaves no one to send to (see `suppressedRefusal`).
 */
export async function leaveOutSuppressed(
  db: Db,
  accountId: number,
  request: EmailRequest,
): Promise<{ request: EmailRequest; suppressed: SuppressedAddress[]; everyone: boolean }> {
  const suppressed = await suppressedForAll(db, accountId, envelopeOf(request))
  if (suppressed.length === 0) return { request, suppressed, everyone: false }
  const kept = (list: string[]) => withoutSuppressed(list, suppressed).send
  const left = { ...request, to: kept(request.to), cc: kept(request.cc), bcc: kept(request.bcc) }
  return { request: left, suppressed, everyone: envelopeOf(left).length === 0 }
}

/**
 * RECIPIENT_SUPPRESSED, answered before anything is recorded (no quota used, the
 * Idempotency-Key left unused). It waits for the caller to be checked, so that a cached caller
 * whose key was just revoked learns nothing of the account's list.
 */
export async function suppressedRefusal(
  requestCaller: RequestCaller,
  suppressed: SuppressedAddress[],
): Promise<AppError> {
  await requestCaller.check()
  return new AppError('RECIPIENT_SUPPRESSED', `Every recipient is suppressed: ${listed(suppressed)}`, {
    details: { suppressed },
  })
}

/** An answer that says which recipients were left out as suppressed, when any were. */
export function withSuppressedSaid<T extends { message: string }>(
  answer: T,
  suppressed: SuppressedAddress[],
): T | (T & { suppressedRecipients: SuppressedAddress[] }) {
  if (suppressed.length === 0) return answer
  return {
    ...answer,
    message: `${answer.message}; left out as suppressed: ${listed(suppressed)}`,
    suppressedRecipients: suppressed,
  }
}

function listed(suppressed: SuppressedAddress[]): string {
  return suppressed.map((s) => `${s.email} (${s.reason})`).join(', ')
}
