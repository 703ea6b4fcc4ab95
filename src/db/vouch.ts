import type { Plan } from '../plans.ts'
import { keyStillSays } from './api-keys.ts'
import { type SendingConnection, sendingConnectionNow } from './connections.ts'
import type { Db, Fragment } from './sql.ts'

/**
 * What a request remembered rather than read (its key's caller, its connection, as read by an
 * earlier request): what it writes is written only if all of it still holds, checked in the
 * same statement. The account is the one the request writes for.
 */
export interface Vouch {
  keyId: number
  /** The SHA-256 of the request's API key. */
  digest: Buffer
  plan: Plan
  /** The connection the key is scoped to, if any. */
  scope: number | null
  connection: SendingConnection
}

/** A vouch as a JSON value, for a statement's rows to carry (see vouchHolds). */
export function vouchJson(vouch: Vouch) {
  return {
    key_id: vouch.keyId,
    digest: vouch.digest.toString('hex'),
    plan: vouch.plan,
    scope: vouch.scope,
    connection: { ...vouch.connection },
  }
}

/**
 * A condition: the vouch `vouched` (a jsonb expression from vouchJson) still holds for a write
 * by `accountId` through `connectionId`: the key is usable and says the same, and the connection
 * reads exactly as remembered (every field a send uses, paused and disabled included).
 */
export function vouchHolds(db: Db, vouched: Fragment, accountId: Fragment, connectionId: Fragment): Fragment {
  return db`${keyStillSays(db, {
    keyId: db`(${vouched}->>'key_id')::int`,
    digest: db`decode(${vouched}->>'digest', 'hex')`,
    accountId,
    plan: db`${vouched}->>'plan'`,
    connectionId: db`(${vouched}->>'scope')::int`,
  })} and ${sendingConnectionNow(db, connectionId)} = ${vouched}->'connection'`
}
