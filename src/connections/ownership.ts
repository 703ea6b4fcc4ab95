import { AppError } from '../app-error.ts'
import { ownsConnection } from '../db/connections.ts'
import { isStorableId } from '../db/ids.ts'
import { queuedOnConnection } from '../db/queue.ts'
import type { Db } from '../db/sql.ts'

/**
 * The operator's connection commands act on any connection by ID; an account's owner reaches
 * only the account's own. Another account's connection is as unknown as one that never was.
 */
export async function ownConnection(db: Db, accountId: number, id: number): Promise<void> {
  if (!(isStorableId(id) && (await ownsConnection(db, accountId, id)))) {
    throw new AppError('UNKNOWN_CONNECTION', `There is no connection with ID ${id} on this account`)
  }
}

/** What deleting the connection would do: its queued mail fails ("connection deleted"). */
export async function queuedMail(db: Db, accountId: number, id: number): Promise<number> {
  await ownConnection(db, accountId, id)
  return queuedOnConnection(db, accountId, id)
}
