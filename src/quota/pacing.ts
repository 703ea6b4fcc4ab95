import type { SendingConnection } from '../db/connections.ts'
import type { Db } from '../db/sql.ts'
import { takePacingToken } from '../db/usage.ts'
import { paceExceeded } from './refusals.ts'

/** A bucket never holds fewer than this many tokens (unless the rate is lower): a small burst goes at once. */
const MIN_BURST = 10

/**
 * The bucket holds one second of sending, and never fewer than `min(rate, 10)` tokens (the
 * rulings): `min(rate, max(10, ceil(rate / 60)))`, so 60000 a minute bursts 1000, 600 bursts 10.
 */
export function bucketCapacity(rate: number): number {
  return Math.min(rate, Math.max(MIN_BURST, Math.ceil(rate / 60)))
}

/**
 * Takes one token from the connection's bucket, refilled at `rate` tokens a minute, or throws
 * 429 RATE_LIMITED with the time until a token is due.
 */
export async function takeToken(tx: Db, connection: SendingConnection): Promise<void> {
  const token = await takePacingToken(
    tx,
    connection.id,
    bucketCapacity(connection.rate),
    connection.rate / 60,
  )
  if (token.taken) return
  throw paceExceeded(connection, token.waitMs)
}
