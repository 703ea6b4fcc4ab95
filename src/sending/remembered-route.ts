import { rememberConnection, rememberedConnection } from '../connections/remembered.ts'
import { chosenConnection, connectionRef, type SendMode } from '../connections/selection.ts'
import type { SendingConnection } from '../db/connections.ts'
import type { FindingsAsked, SendFindings } from '../db/send-attempts.ts'
import type { Sql } from '../db/sql.ts'
import type { Vouch } from '../db/vouch.ts'
import type { Caller } from '../keys/caller.ts'
import type { CallerClaim } from '../keys/claim.ts'
import { sendRounds } from './send-rounds.ts'

/**
 * A request going ahead on what earlier requests read: its claim's caller, remembered, and the
 * connection its `from` names, remembered and fit for the request's mode. The statement that
 * writes for it checks the vouch; `checked` is told how that went.
 */
export interface RememberedRoute {
  caller: Caller
  connection: SendingConnection
  vouch: Vouch
  /** The statement answered: `stale` when the vouch no longer held, and nothing was written. */
  checked(stale: boolean): void
}

/**
 * The route a request with an unconfirmed `claim` may go ahead on, if all it needs is
 * remembered; undefined otherwise, and for any refusal, which reading it all again answers.
 */
export function rememberedRoute(
  sql: Sql,
  claim: CallerClaim,
  from: string | undefined,
  mode: SendMode,
): RememberedRoute | undefined {
  const { caller } = claim
  const ref = connectionRef(caller, from)
  const remembered = rememberedConnection(sql, ref)
  if (!remembered) return undefined
  let connection: SendingConnection
  try {
    connection = chosenConnection(caller, from, remembered, mode)
  } catch {
    return undefined
  }
  return {
    caller,
    connection,
    vouch: {
      keyId: caller.keyId,
      digest: claim.digest,
      plan: caller.plan,
      scope: caller.connectionId,
      connection,
    },
    checked: (stale) => (stale ? rememberConnection(sql, ref, undefined) : claim.vouched()),
  }
}

/** What a request finds (see sendFindings), its connection then remembered for later requests. */
export async function findRemembering(sql: Sql, asked: FindingsAsked): Promise<SendFindings> {
  const found = await sendRounds(sql).find(asked)
  rememberConnection(sql, asked.ref, found.connection)
  return found
}
