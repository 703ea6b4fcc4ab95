/** A bucket never holds fewer than this many tokens (unless the rate is lower): a small burst goes at once. */
const MIN_BURST = 10

/**
 * The bucket holds one second of sending, and never fewer than `min(rate, 10)` tokens
 * (docs/decisions.md, "Quota, daily limit and pacing"): `min(rate, max(10, ceil(rate / 60)))`,
 * so 60000 a minute bursts 1000, 600 bursts 10.
 */
export function bucketCapacity(rate: number): number {
  return Math.min(rate, Math.max(MIN_BURST, Math.ceil(rate / 60)))
}
