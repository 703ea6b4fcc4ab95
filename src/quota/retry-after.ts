/** Whole seconds until `instant`, at least 1: what `Retry-After` and `details.retryAfter` carry. */
export function secondsUntil(instant: Date): number {
  return Math.max(1, Math.ceil((instant.getTime() - Date.now()) / 1000))
}

/** Every 429 carries the standard header as well as the body's details. */
export function retryAfterHeader(seconds: number): Record<string, string> {
  return { 'Retry-After': String(seconds) }
}
