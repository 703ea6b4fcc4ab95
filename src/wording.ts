/**
 * A count and its noun, the noun singular for exactly one: `1 email`, `2 emails`, `0 emails`.
 * `plural` for nouns not made with an `s`.
 */
export function counted(n: number, noun: string, plural = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : plural}`
}
