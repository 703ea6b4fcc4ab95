/** How queued mail is retried; tests shorten the delays. */
export interface RetryPolicy {
  /** Transient failures (unreachable server, 4xx reply) after which a message ends failed. */
  maxFailures: number
  /** Wait before the next attempt after the n-th transient failure (n >= 1). */
  failureDelayMs(failures: number): number
  /** Wait after the n-th push-back (n >= 1): backing off, which is not failing. */
  pushbackDelayMs(deferrals: number): number
}

const doubling = (firstMs: number, maxMs: number) => (n: number) =>
  Math.min(firstMs * 2 ** Math.min(n - 1, 30), maxMs)

/** 30 s doubling to an hour, eight tries (about four hours); push-back from 1 min up to 15 min. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxFailures: 8,
  failureDelayMs: doubling(30_000, 3_600_000),
  pushbackDelayMs: doubling(60_000, 900_000),
}

export function retryPolicy(
  firstFailureMs: number,
  maxFailures: number,
  firstPushbackMs: number,
): RetryPolicy {
  return {
    maxFailures,
    failureDelayMs: doubling(firstFailureMs, firstFailureMs * 120),
    pushbackDelayMs: doubling(firstPushbackMs, firstPushbackMs * 15),
  }
}
