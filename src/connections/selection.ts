import {
  connectionByAddress,
  connectionById,
  defaultConnection,
  type SendingConnection,
} from '../db/connections.ts'
import type { Db } from '../db/sql.ts'
import { AppError } from '../errors.ts'
import type { Caller } from '../keys/caller.ts'

/**
 * `now`: the caller waits for the SMTP server (POST /send); a paused connection is refused.
 * `queued`: the mail waits its turn in the background; a paused connection is accepted.
 */
export type SendMode = 'now' | 'queued'

/**
 * Chooses the connection a send goes through, with the rulings' order and errors: a key scoped
 * to a connection wins; otherwise `from` (case-insensitive); otherwise the default connection.
 */
export async function selectConnection(
  db: Db,
  caller: Pick<Caller, 'accountId' | 'connectionId'>,
  from: string | undefined,
  mode: SendMode,
): Promise<SendingConnection> {
  if (caller.connectionId !== null) {
    const scoped = await connectionById(db, caller.connectionId)
    // Authentication already refused keys whose connection is gone; a race with a delete lands here.
    if (!scoped) throw notFound('The connection this API key is scoped to no longer exists')
    if (from !== undefined && from.toLowerCase() !== scoped.from_address.toLowerCase()) {
      throw new AppError(
        'CONNECTION_SCOPE_MISMATCH',
        `This API key may only send from ${scoped.from_address}, not ${from}`,
      )
    }
    return usable(scoped, from !== undefined, mode)
  }
  if (from !== undefined) {
    const named = await connectionByAddress(db, caller.accountId, from)
    if (!named) throw notFound(`${from} is not the address of one of this account's connections`)
    return usable(named, true, mode)
  }
  const fallback = await defaultConnection(db, caller.accountId)
  if (!fallback) throw new AppError('NO_CONNECTION', 'This account has no connection to send through')
  return usable(fallback, false, mode)
}

function usable(connection: SendingConnection, namedByFrom: boolean, mode: SendMode): SendingConnection {
  if (connection.disabled) throw notFound(`The connection for ${connection.from_address} is disabled`)
  if (connection.paused && mode === 'now') {
    if (namedByFrom) throw notFound(`The connection for ${connection.from_address} is paused`)
    throw new AppError(
      'CONNECTION_PAUSED',
      `The connection for ${connection.from_address} is paused because its provider kept rejecting sends; it resumes by itself`,
    )
  }
  return connection
}

function notFound(message: string) {
  return new AppError('CONNECTION_NOT_FOUND', message)
}
