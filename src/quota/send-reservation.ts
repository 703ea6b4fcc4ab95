import type { SendingConnection } from '../db/connections.ts'
import type { Reservation } from '../db/outbox-types.ts'
import type { AttemptToRecord, SendAttempt } from '../db/send-attempts.ts'
import type { Plan } from '../plans.ts'
import { limitReached } from './refusals.ts'
import { sendingLimits } from './reservations.ts'

/** Records an attempt with the limits it counts against (one statement, maybe with others). */
export type RecordAttempt = (attempt: AttemptToRecord) => Promise<SendAttempt>

/**
 * POST /send's attempt claimed under its idempotency key, and its units of the plan's daily
 * limit, the connection's quota and pacing reserved, by `record` in that order: the
 * first limit that refuses throws its LimitReached and leaves nothing taken and nothing
 * recorded, the key unused. `taken` when another request already holds the key, `stale` when
 * the attempt's recheck no longer holds (nothing taken either).
 */
export async function claimAndReserve(
  record: RecordAttempt,
  plan: Plan,
  connection: SendingConnection,
  attempt: AttemptToRecord['attempt'],
): Promise<{ id: number; reservation: Reservation } | 'taken' | 'stale'> {
  const result = await record({ attempt, limits: sendingLimits(plan, attempt.accountId, connection) })
  if (result.refused === null) {
    return { id: result.id, reservation: { usageDay: result.usageDay, quotaWindow: result.quotaWindow } }
  }
  if (result.refused === 'key') return 'taken'
  if (result.refused === 'stale') return 'stale'
  throw limitReached(plan, attempt.accountId, connection, result)
}
