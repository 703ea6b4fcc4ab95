import { ApiError, type ErrorDetails } from '../errors.ts'

/**
 * A sending limit said "not now" (429): `/send` answers it as is, while queued and batch mail
 * waits `waitMs`, the exact time until the limit lets the next message through.
 */
export class LimitReached extends ApiError {
  constructor(
    readonly waitMs: number,
    code: string,
    message: string,
    details: ErrorDetails,
  ) {
    super(429, { code, message, details }, { 'Retry-After': String(wholeSeconds(waitMs)) })
  }
}

/** What `Retry-After` and `details.retryAfter` carry: whole seconds, at least 1. */
export function wholeSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000))
}
