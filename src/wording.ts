/**
 * A count and its noun, the noun singular for exactly one: `1 email`, `2 emails`, `0 emails`.
 * `plural` for nouns not made with an `s`.
 */
export function counted(n: number, noun: string, plural = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : plural}`
}

/** A span of time as an error message says it: whole hours from one hour on, seconds below. */
export function elapsed(ms: number): string {
  const h = ms / 3_600_000
  return h >= 1 ? counted(Math.round(h), 'hour') : counted(Math.round(ms / 1000), 'second')
}
