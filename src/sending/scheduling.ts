import { AppError, invalidInput } from '../app-error.ts'

/**
 * Scheduled sends and changing one's mind: what a `scheduled_at` may be, and what can still be
 * canceled or moved. Pure functions of what is known; the statements that act on them
 * (src/db/cancellation.ts) repeat the same guard in SQL, so that a worker claiming the email at
 * the same moment and the cancel can never both win.
 */

const DAY_MS = 24 * 60 * 60 * 1000
/** How far ahead an email or batch may be scheduled. */
export const MAX_SCHEDULE_AHEAD_MS = 30 * DAY_MS

/**
 * The time `value` (an RFC 3339 date-time with an offset, as the validator let it through) names,
 * when it is neither before `now` nor more than 30 days after it; otherwise the validation body
 * at `["scheduled_at"]`. Undefined when the request schedules nothing.
 */
export function scheduledTime(value: string | undefined, now: number): Date | undefined {
  if (value === undefined) return undefined
  const at = new Date(value)
  const path = ['scheduled_at']
  if (at.getTime() < now) {
    throw invalidInput([{ path, message: 'scheduled_at is in the past', code: 'too_small' }])
  }
  if (at.getTime() > now + MAX_SCHEDULE_AHEAD_MS) {
    throw invalidInput([{ path, message: 'scheduled_at is more than 30 days ahead', code: 'too_big' }])
  }
  return at
}

/**
 * POST /send sends now: a `scheduled_at` there is refused rather than ignored, since mail meant
 * for later must never go at once (docs/decisions.md, "Scheduled sends and canceling").
 */
export function refuseScheduleOnSend(body: { scheduled_at?: string | undefined }): void {
  if (body.scheduled_at === undefined) return
  throw invalidInput([
    {
      path: ['scheduled_at'],
      message: 'POST /send sends now; schedule a send with POST /enqueue',
      code: 'custom',
    },
  ])
}

/** An email as far as canceling it goes: its status as read, and the attempts made on it. */
export interface CancelableEmail {
  status: string
  attempts: number
}

/** Whether the email can still be canceled: scheduled or queued, with no attempt ever started. */
export function isCancelable(email: CancelableEmail): boolean {
  return (email.status === 'scheduled' || email.status === 'queued') && email.attempts === 0
}

/** Whether a batch in `status` can be canceled: while it is pending or running. */
export function isBatchCancelable(status: string): boolean {
  return status === 'pending' || status === 'running'
}

/** The refusal to cancel email `id`, which reads as `status`. */
export function notCancelable(id: number, status: string): AppError {
  return new AppError(
    'EMAIL_NOT_CANCELABLE',
    `Email ${id} is ${status}; only a scheduled or queued email not yet tried can be canceled`,
    { details: { status } },
  )
}

/** The refusal to move email `id`, which reads as `status`. */
export function notScheduled(id: number, status: string): AppError {
  return new AppError(
    'EMAIL_NOT_SCHEDULED',
    `Email ${id} is ${status}; only a scheduled email can be moved`,
    {
      details: { status },
    },
  )
}
