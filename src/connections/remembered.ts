import type { ConnectionRef, SendingConnection } from '../db/connections.ts'
import { Remembered } from '../db/remembered.ts'
import { perPool } from '../db/rounds.ts'
import type { Sql } from '../db/sql.ts'

/**
 * The connections POST /sends and /enqueues lately found, by how they named them: for a later
 * request's statement to vouch for (see Vouch), which checks the connection still reads the same.
 */
const connections = perPool(() => new Remembered<SendingConnection>({ ttlMs: 60_000, max: 10_000 }))

/** `from` is case-insensitive: any spelling of an address names the same connection. */
function keyOf(ref: ConnectionRef): string {
  return JSON.stringify('address' in ref ? { ...ref, address: ref.address.toLowerCase() } : ref)
}

export function rememberedConnection(sql: Sql, ref: ConnectionRef): SendingConnection | undefined {
  return connections(sql).get(keyOf(ref))
}

export function rememberConnection(sql: Sql, ref: ConnectionRef, connection: SendingConnection | undefined) {
  if (connection) connections(sql).set(keyOf(ref), connection)
  else connections(sql).forget(keyOf(ref))
}
