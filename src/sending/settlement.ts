import type { HardBounce, Settlement } from '../db/outbox-types.ts'
import {
  nextTry,
  type RetryCause,
  type RetryPolicy,
  type RetryState,
  retryDelayMs,
} from '../queue/retry-policy.ts'
import { delivered, type RecipientOutcome } from '../smtp/outcome.ts'
import { hardBouncesOf } from '../suppressions/bounces.ts'
import { counted, elapsed } from '../wording.ts'
import type { Delivery } from './deliver.ts'
import { afterAttempt, outcomeText, serverTook } from './recipients.ts'

/**
 * A queued message's attempt as its settlement reads it: `envelope` is every recipient once,
 * `earlier` each one's outcome before this attempt (null before the first).
 */
export interface QueuedAttempt {
  path: 'queue'
  envelope: string[]
  earlier: RecipientOutcome[] | null
  retry: RetryState
  policy: RetryPolicy
}

/** What an attempt's outcome makes of its record, its units and its connection. */
export interface AttemptSettled {
  /** Every recipient's outcome so far. */
  recipients: RecipientOutcome[]
  settlement: Settlement
  /**
   * The attempt's units go back. A message counts once: its units are spent by the attempt that
   * first delivers it to someone, and given back by every other.
   */
  giveBack: boolean
  /** Recipients the attempt found gone, to suppress (hardBouncesOf); left out when none. */
  hardBounces?: HardBounce[]
  /** The provider pushed back: the connection's whole queue waits this long, in every process. */
  holdQueueMs?: number
  /**
   * The server was out of reach: a probe asks it again this soon, and the rest of the queue
   * waits for its answer instead of each message finding out for itself, with a try of its own.
   */
  probeInMs?: number
}

/**
 * POST /send's settlement: its caller waits for its one try, so it ends now. Taken by the server
 * (for some recipients at least), its units spent; or failed with its units back, its
 * idempotency key freed when the caller may simply wait and retry (`releaseKey`).
 */
export type SendSettled =
  | {
      recipients: RecipientOutcome[]
      settlement: { status: 'sent'; error: null } | { status: 'failed'; error: string }
      giveBack: false
      hardBounces?: HardBounce[]
    }
  | {
      recipients: RecipientOutcome[]
      settlement: { status: 'failed'; error: string; releaseKey: boolean }
      giveBack: true
      hardBounces?: HardBounce[]
    }

/** The settlement of one attempt: a pure reading of its outcome, nothing written. */
export function settlementOf(outcome: Delivery, attempt: { path: 'send' }): SendSettled
export function settlementOf(outcome: Delivery, attempt: QueuedAttempt): AttemptSettled
export function settlementOf(
  outcome: Delivery,
  attempt: { path: 'send' } | QueuedAttempt,
): SendSettled | AttemptSettled {
  return attempt.path === 'send' ? sendSettlement(outcome) : queuedSettlement(outcome, attempt)
}

/**
 * Sent to the ones the server took: a record with a recipient refused is not `sent`, which
 * means every recipient got the message. Nothing taken: the key is freed when the provider
 * pushed back or only deferred the recipients (a retry may reuse it, as after the limits
 * checked before SMTP); otherwise the cause needs changing first.
 */
function sendSettlement(outcome: Delivery): SendSettled {
  const { recipients } = outcome
  const error = outcomeText(recipients)
  if (delivered(outcome)) {
    const settlement =
      error === null ? ({ status: 'sent', error } as const) : ({ status: 'failed', error } as const)
    return { recipients, settlement, giveBack: false, ...suppressions(outcome) }
  }
  const releaseKey =
    outcome.pushback !== undefined ||
    (outcome.unreachable === undefined &&
      recipients.every((r) => r.status === 'deferred' || r.status === 'suppressed'))
  const reason = outcome.pushback ?? error ?? 'The SMTP server did not take the message'
  return {
    recipients,
    settlement: { status: 'failed', error: reason, releaseKey },
    giveBack: true,
    ...suppressions(outcome),
  }
}

/**
 * A queued message ends when no recipient is left to try: `sent` when every one got it, `failed`
 * (with each one's reply) otherwise. Recipients still deferred are tried again when the retry
 * schedule says (nextTry), or the message ends failed with why it gave up.
 */
function queuedSettlement(outcome: Delivery, attempt: QueuedAttempt): AttemptSettled {
  const recipients = afterAttempt(attempt.envelope, attempt.earlier, outcome.recipients)
  const settlement = recordAfter(outcome, recipients, attempt)
  const spent = delivered(outcome) && !attempt.earlier?.some(serverTook)
  return {
    recipients,
    settlement,
    giveBack: !spent,
    ...suppressions(outcome),
    ...(settlement.status === 'queued' && outcome.pushback !== undefined
      ? { holdQueueMs: settlement.delayMs }
      : {}),
    ...(outcome.unreachable === undefined
      ? {}
      : { probeInMs: retryDelayMs(attempt.policy, attempt.retry, 'failure') }),
  }
}

/** The record's status and error after the attempt, with the retry counter it adds one to. */
function recordAfter(
  outcome: Delivery,
  recipients: RecipientOutcome[],
  { retry, policy }: QueuedAttempt,
): Settlement {
  if (!recipients.some((r) => r.status === 'deferred')) {
    const error = outcomeText(recipients)
    return { status: error === null ? 'sent' : 'failed', error }
  }
  const next = nextTry(policy, retry, retryCause(outcome))
  if (next.retry) {
    const last = outcome.pushback ?? outcome.unreachable ?? outcomeText(recipients) ?? 'deferred'
    return { status: 'queued', error: last, delayMs: next.delayMs, counter: next.counter }
  }
  const why =
    next.gaveUp === 'failures'
      ? `Gave up after ${counted(next.failures, 'failed attempt')}: `
      : `Still deferred after ${elapsed(retry.ageMs)}: `
  return { status: 'failed', error: outcomeText(recipients, why), counter: next.counter }
}

/** The recipients this attempt found gone, when there are any. */
function suppressions(outcome: Delivery): { hardBounces?: HardBounce[] } {
  const hardBounces = hardBouncesOf(outcome)
  return hardBounces.length ? { hardBounces } : {}
}

/** What left recipients deferred, as the retry schedule counts it. */
function retryCause(outcome: Delivery): RetryCause {
  if (outcome.pushback !== undefined) return 'pushback'
  return outcome.unreachable !== undefined && outcome.connectionFailure === 'known'
    ? 'known-outage'
    : 'failure'
}
