import { AppError, type ErrorDetails } from '../app-error.ts'

/**
 * A sending limit said "not now": `/send` answers it (429), while queued and batch mail waits
 * `waitMs`, the exact time until the limit lets the next message through.
 */
export class LimitReached extends AppError {
  constructor(
    override readonly waitMs: number,
    code: 'RATE_LIMITED' | 'QUOTA_EXCEEDED' | 'DAILY_LIMIT_REACHED',
    message: string,
    details: ErrorDetails,
  ) {
    super(code, message, { details, waitMs })
  }
}

/** What `Retry-After` and `details.retryAfter` carry: whole seconds, at least 1. */
export function wholeSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000))
}
