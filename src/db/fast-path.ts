import type { Plan } from '../plans.ts'
import { keyStillSays } from './api-keys.ts'
import { type SendingConnection, sendingConnectionNow } from './connections.ts'
import type { Db, Fragment } from './sql.ts'

/**
 * The fast path's side in SQL (src/fast-path/README.md): what a request took from the caches
 * rather than read (its key's caller, its connection, as an earlier request read them). What it
 * writes is written only if all of it still holds, rechecked in the same statement. The account
 * is the one the request writes for.
 */
export interface Recheck {
  keyId: number
  /** The SHA-256 of the request's API key. */
  digest: Buffer
  plan: Plan
  /** The connection the key is scoped to, if any. */
  scope: number | null
  connection: SendingConnection
}

/** A recheck as a JSON value, for a statement's rows to carry (see recheckHolds). */
export function recheckJson(recheck: Recheck) {
  return {
    key_id: recheck.keyId,
    digest: recheck.digest.toString('hex'),
    plan: recheck.plan,
    scope: recheck.scope,
    connection: { ...recheck.connection },
  }
}

/**
 * A condition: the recheck `rechecked` (a jsonb expression from recheckJson) still holds for a
 * write by `accountId` through `connectionId`: the key is usable and says the same, and the
 * connection reads exactly as cached (every field a send uses, paused and disabled included).
 */
export function recheckHolds(
  db: Db,
  rechecked: Fragment,
  accountId: Fragment,
  connectionId: Fragment,
): Fragment {
  return db`${keyStillSays(db, {
    keyId: db`(${rechecked}->>'key_id')::int`,
    digest: db`decode(${rechecked}->>'digest', 'hex')`,
    accountId,
    plan: db`${rechecked}->>'plan'`,
    connectionId: db`(${rechecked}->>'scope')::int`,
  })} and ${sendingConnectionNow(db, connectionId)} = ${rechecked}->'connection'`
}
