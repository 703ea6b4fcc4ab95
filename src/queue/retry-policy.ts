import type { RetryCounter } from '../db/outbox-types.ts'

/** How queued mail is retried; tests shorten the delays. */
export interface RetryPolicy {
  /** Transient failures (unreachable server, deferred recipients) after which a message ends failed. */
  maxFailures: number
  /** Wait before the next attempt after the n-th transient failure (n >= 1). */
  failureDelayMs(failures: number): number
  /** Wait after the n-th push-back (n >= 1): backing off, which is not failing. */
  pushbackDelayMs(deferrals: number): number
  /** A message still not delivered to everyone this long after it was queued ends failed. */
  maxAgeMs: number
}

const doubling = (firstMs: number, maxMs: number) => (n: number) =>
  Math.min(firstMs * 2 ** Math.min(n - 1, 30), maxMs)

const HOUR_MS = 3_600_000

/**
 * 30 s doubling to an hour, eight tries (about four hours); push-back from 1 min up to 15 min,
 * for as long as the queue lifetime (MAILROOM_QUEUE_LIFETIME_HOURS, 72 by default).
 */
export function defaultRetryPolicy(queueLifetimeHours: number): RetryPolicy {
  return {
    maxFailures: 8,
    failureDelayMs: doubling(30_000, HOUR_MS),
    pushbackDelayMs: doubling(60_000, 900_000),
    maxAgeMs: queueLifetimeHours * HOUR_MS,
  }
}

export function retryPolicy(
  firstFailureMs: number,
  maxFailures: number,
  firstPushbackMs: number,
  maxAgeMs = 72 * HOUR_MS,
): RetryPolicy {
  return {
    maxFailures,
    failureDelayMs: doubling(firstFailureMs, firstFailureMs * 120),
    pushbackDelayMs: doubling(firstPushbackMs, firstPushbackMs * 15),
    maxAgeMs,
  }
}

/** What a queued message has counted toward its retries before this attempt. */
export interface RetryState {
  failures: number
  deferrals: number
  /** How long it has been in the queue. */
  ageMs: number
}

/**
 * What left recipients to try again: the provider pushed back; the connection's server was out
 * of reach and another attempt had found it first (`known-outage`); anything else (`failure`: a
 * deferral of the recipients, or an outage this attempt was the first to meet).
 */
export type RetryCause = 'pushback' | 'failure' | 'known-outage'

/** When the next attempt comes, or why there is none. */
export type NextTry =
  | { retry: true; delayMs: number; counter: RetryCounter | undefined }
  | { retry: false; gaveUp: 'failures'; failures: number; counter: 'failures' }
  | { retry: false; gaveUp: 'lifetime'; counter: RetryCounter | undefined }

/**
 * How long after an attempt that met `cause` the next one comes: push-back on its own schedule,
 * which counts deferrals; a known outage at once (the connection's wait for its server already
 * holds the queue), spending no try; anything else on the failure schedule.
 */
export function retryDelayMs(policy: RetryPolicy, state: RetryState, cause: RetryCause): number {
  if (cause === 'pushback') return policy.pushbackDelayMs(state.deferrals + 1)
  if (cause === 'known-outage') return 0
  return policy.failureDelayMs(state.failures + 1)
}

/**
 * The retry schedule's decision after an attempt that left recipients deferred. Push-back never
 * runs out by itself; failures run out at the policy's number of tries; either way no attempt is
 * due past the queue lifetime.
 */
export function nextTry(policy: RetryPolicy, state: RetryState, cause: RetryCause): NextTry {
  const counter = cause === 'pushback' ? 'deferrals' : cause === 'failure' ? 'failures' : undefined
  const delayMs = retryDelayMs(policy, state, cause)
  if (counter === 'failures' && state.failures + 1 >= policy.maxFailures) {
    return { retry: false, gaveUp: 'failures', failures: state.failures + 1, counter }
  }
  if (state.ageMs + delayMs > policy.maxAgeMs) return { retry: false, gaveUp: 'lifetime', counter }
  return { retry: true, delayMs, counter }
}
