import type { SendingConnection } from '../db/connections.ts'
import type { MessageBodies, OutboxMessage, Reservation } from '../db/outbox.ts'
import { recordSendAttempt } from '../db/send-attempts.ts'
import type { Db } from '../db/sql.ts'
import type { Plan } from '../plans.ts'
import { limitReached } from './refusals.ts'
import { sendingLimits } from './reservations.ts'

/**
 * POST /send's attempt claimed under its idempotency key, and its units of the plan's daily
 * limit, the connection's quota and pacing reserved, in one statement and the rulings' order:
 * the first limit that refuses throws its LimitReached and leaves nothing taken and nothing
 * recorded, the key unused. Undefined when another request already holds the key (nothing taken
 * either).
 */
export async function claimAndReserve(
  db: Db,
  plan: Plan,
  connection: SendingConnection,
  attempt: OutboxMessage & MessageBodies & { idempotencyKey: Buffer | null },
): Promise<{ id: number; reservation: Reservation } | undefined> {
  const result = await recordSendAttempt(db, attempt, sendingLimits(plan, attempt.accountId, connection))
  if (result.refused === null) {
    return { id: result.id, reservation: { usageDay: result.usageDay, quotaWindow: result.quotaWindow } }
  }
  if (result.refused === 'key') return undefined
  throw limitReached(plan, attempt.accountId, connection, result)
}
