import { type PauseReason, pauseReasons, queuedOnConnection } from '../db/connection-pauses.ts'
import { ownsConnection } from '../db/connections.ts'
import { isStorableId } from '../db/ids.ts'
import type { Db } from '../db/sql.ts'
import { AppError } from '../errors.ts'

export type { PauseReason }

/**
 * The operator's connection commands act on any connection by ID; an account's owner reaches
 * only the account's own. Another account's connection is as unknown as one that never was.
 */
export async function ownConnection(db: Db, accountId: number, id: number): Promise<void> {
  if (!(isStorableId(id) && (await ownsConnection(db, accountId, id)))) {
    throw new AppError('UNKNOWN_CONNECTION', `There is no connection with ID ${id} on this account`)
  }
}

/** Why each paused connection of the account is paused. */
export async function whyPaused(db: Db, accountId: number): Promise<Map<number, PauseReason>> {
  const reasons = await pauseReasons(db, accountId)
  return new Map(reasons.map((reason) => [reason.connection_id, reason]))
}

/** What deleting the connection would do: its queued mail fails ("connection deleted"). */
export async function queuedMail(db: Db, accountId: number, id: number): Promise<number> {
  await ownConnection(db, accountId, id)
  return queuedOnConnection(db, accountId, id)
}
