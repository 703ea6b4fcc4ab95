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
