import type { SendingConnection } from '../db/connections.ts'
import type { Reservation } from '../db/outbox-types.ts'
import type { AttemptToRecord, SendAttempt } from '../db/send-attempts.ts'
import type { Plan } from '../plans.ts'
import { limitReached } from './refusals.ts'
import { sendingLimits } from './reservations.ts'

/**
 * POST /send's attempt with the limits it counts against, in the order its statement takes their
 * units: the plan's daily limit, the connection's quota, then its pacing.
 */
export function withLimits(
  plan: Plan,
  connection: SendingConnection,
  attempt: AttemptToRecord['attempt'],
): AttemptToRecord {
  return { attempt, limits: sendingLimits(plan, attempt.accountId, connection) }
}

/**
 * What the attempt's statement answered: the attempt claimed under its idempotency key with its
 * units reserved; `taken` when another request already holds the key, `stale` when the attempt's
 * recheck no longer holds, `suppressed` when a recipient is suppressed for all mail; or the first limit that refused, thrown as its LimitReached. A refusal
 * of any kind took nothing and recorded nothing, and left the key unused.
 */
export function reservationOf(
  result: SendAttempt,
  plan: Plan,
  accountId: number,
  connection: SendingConnection,
): { id: number; reservation: Reservation } | 'taken' | 'stale' | 'suppressed' {
  if (result.refused === null) {
    return { id: result.id, reservation: { usageDay: result.usageDay, quotaWindow: result.quotaWindow } }
  }
  if (result.refused === 'key') return 'taken'
  if (result.refused === 'stale' || result.refused === 'suppressed') return result.refused
  throw limitReached(plan, accountId, connection, result)
}
