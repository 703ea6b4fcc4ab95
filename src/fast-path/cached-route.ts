import { chooseConnection, connectionRef, type SendMode } from '../connections/selection.ts'
import type { SendingConnection } from '../db/connections.ts'
import type { Recheck } from '../db/fast-path.ts'
import type { FindingsAsked, SendFindings } from '../db/send-attempts.ts'
import type { Caller } from '../keys/caller.ts'
import type { RequestCaller } from './caller-cache.ts'
import type { FastPath } from './fast-path.ts'

/**
 * A request going ahead on what earlier requests read: its caller, cached, and the connection
 * its `from` names, cached and fit for the request's mode. The statement that writes for it
 * rechecks both; `rechecked` is told how that went.
 */
export interface CachedRoute {
  caller: Caller
  connection: SendingConnection
  recheck: Recheck
  /** The statement answered: `stale` when the recheck failed, and nothing was written. */
  rechecked(stale: boolean): void
}

/**
 * The route a request whose caller is not yet checked may go ahead on, if all it needs is
 * cached; undefined otherwise, and for any refusal, which reading it all again answers.
 */
export function cachedRoute(
  fastPath: FastPath,
  requestCaller: RequestCaller,
  from: string | undefined,
  mode: SendMode,
): CachedRoute | undefined {
  const { caller } = requestCaller
  const ref = connectionRef(caller, from)
  const cached = fastPath.connections.get(ref)
  if (!cached) return undefined
  // Any refusal is answered by reading it all again, on the usual path.
  const connection = chooseConnection(caller, from, cached, mode)
  if ('refused' in connection) return undefined
  return {
    caller,
    connection,
    recheck: {
      keyId: caller.keyId,
      digest: requestCaller.digest,
      plan: caller.plan,
      scope: caller.connectionId,
      connection,
    },
    rechecked: (stale) => (stale ? fastPath.connections.set(ref, undefined) : requestCaller.recheckPassed()),
  }
}

/** What a request finds (see sendFindings), its connection then cached for later requests. */
export async function findAndCache(fastPath: FastPath, asked: FindingsAsked): Promise<SendFindings> {
  const found = await fastPath.statements.find(asked)
  fastPath.connections.set(asked.ref, found.connection)
  return found
}
