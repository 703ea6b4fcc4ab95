import type { SendingConnection } from '../connections/selection.ts'
import type { Db } from '../db/sql.ts'
import { LimitReached, wholeSeconds } from './limit-reached.ts'

/** The bucket holds at most this many tokens, so a burst never exceeds ten messages. */
export const MAX_BURST = 10

export function bucketCapacity(rate: number): number {
  return Math.min(rate, MAX_BURST)
}

/**
 * Takes one token from the connection's bucket, refilled at `rate` tokens a minute, or throws
 * 429 RATE_LIMITED with the time until a token is due. The refill is computed in the
 * same statement that takes the token, under the row's lock, so concurrent senders agree.
 */
export async function takePacingToken(tx: Db, connection: SendingConnection): Promise<void> {
  const capacity = bucketCapacity(connection.rate)
  const perSecond = connection.rate / 60
  const [taken] = await tx`
    insert into connection_pacing as p (connection_id, tokens, refilled_at)
    values (${connection.id}, ${capacity - 1}, mailroom_clock())
    on conflict (connection_id) do update set
      tokens = least(${capacity}::float8,
        p.tokens + greatest(0, extract(epoch from mailroom_clock() - p.refilled_at)) * ${perSecond}::float8) - 1,
      refilled_at = mailroom_clock()
    where least(${capacity}::float8,
      p.tokens + greatest(0, extract(epoch from mailroom_clock() - p.refilled_at)) * ${perSecond}::float8) >= 1
    returning 1`
  if (taken) return
  const [bucket] = await tx<{ tokens: number }[]>`
    select least(${capacity}::float8,
      tokens + greatest(0, extract(epoch from mailroom_clock() - refilled_at)) * ${perSecond}::float8) as tokens
    from connection_pacing where connection_id = ${connection.id}`
  const waitMs = Math.ceil(((1 - (bucket?.tokens ?? 0)) / perSecond) * 1000)
  const retryAfter = wholeSeconds(waitMs)
  throw new LimitReached(
    waitMs,
    'RATE_LIMITED',
    `The connection for ${connection.from_address} sends at most ${connection.rate} emails a minute; retry in ${retryAfter} s`,
    { retryAfter },
  )
}
