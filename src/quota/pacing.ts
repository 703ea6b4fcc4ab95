import type { SendingConnection } from '../db/connections.ts'
import type { Db } from '../db/sql.ts'
import { takePacingToken } from '../db/usage.ts'
import { LimitReached, wholeSeconds } from './limit-reached.ts'

/** The bucket holds at most this many tokens, so a burst never exceeds ten messages. */
const MAX_BURST = 10

function bucketCapacity(rate: number): number {
  return Math.min(rate, MAX_BURST)
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
  const retryAfter = wholeSeconds(token.waitMs)
  throw new LimitReached(
    token.waitMs,
    'RATE_LIMITED',
    `The connection for ${connection.from_address} sends at most ${connection.rate} emails a minute; retry in ${retryAfter} s`,
    { retryAfter },
  )
}
