import { AppError } from '../app-error.ts'
import type { Db } from '../db/sql.ts'
import { type ApiKey, listKeys } from './keys.ts'

/**
 * The operator's key commands act on any key by ID; an account's owner reaches only the
 * account's own. Another account's key is as unknown as one that never was.
 */
export async function ownKey(db: Db, accountId: number, id: number): Promise<ApiKey> {
  const key = (await listKeys(db, accountId)).find((k) => k.id === id)
  if (!key) throw new AppError('KEY_NOT_FOUND', `There is no API key with ID ${id} on this account`)
  return key
}
