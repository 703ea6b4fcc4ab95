import { AppError, type ErrorCode } from '../app-error.ts'
import { type ConnectionRef, connectionNamed, type SendingConnection } from '../db/connections.ts'
import type { Db } from '../db/sql.ts'
import type { Caller } from '../keys/caller.ts'

/**
 * `now`: the caller waits for the SMTP server (POST /send); a paused connection is refused.
 * `queued`: the mail waits its turn in the background; a paused connection is accepted.
 */
export type SendMode = 'now' | 'queued'

type Chooser = Pick<Caller, 'accountId' | 'connectionId'>

/**
 * Chooses the connection a send goes through, with the contract's order and errors
 * (docs/decisions.md, "Connection selection"): a key scoped to a connection wins; otherwise
 * `from` (case-insensitive); otherwise the default connection.
 */
export async function selectConnection(
  db: Db,
  caller: Chooser,
  from: string | undefined,
  mode: SendMode,
): Promise<SendingConnection> {
  return chosenConnection(caller, from, await connectionNamed(db, connectionRef(caller, from)), mode)
}

/** The connection the selection order looks at: the key's scope, else `from`, else the default. */
export function connectionRef(caller: Chooser, from: string | undefined): ConnectionRef {
  if (caller.connectionId !== null) return { id: caller.connectionId }
  if (from !== undefined) return { accountId: caller.accountId, address: from }
  return { accountId: caller.accountId }
}

/** A send the selection order refuses: the error catalog's code and what to say. */
export interface ConnectionRefusal {
  refused: ErrorCode
  message: string
}

/**
 * The selection order's decision: `found`, the connection `connectionRef` named (if it exists),
 * or the refusal the contract gives. A disabled connection is refused; a paused one is refused
 * when the caller waits (`now`), as not found when `from` named it, and accepted for the queue.
 */
export function chooseConnection(
  caller: Chooser,
  from: string | undefined,
  found: SendingConnection | undefined,
  mode: SendMode,
): SendingConnection | ConnectionRefusal {
  if (caller.connectionId !== null) {
    // Authentication already refused keys whose connection is gone; a race with a delete lands here.
    if (!found) return notFound('The connection this API key is scoped to no longer exists')
    if (from !== undefined && from.toLowerCase() !== found.from_address.toLowerCase()) {
      return {
        refused: 'CONNECTION_SCOPE_MISMATCH',
        message: `This API key may only send from ${found.from_address}, not ${from}`,
      }
    }
    return usable(found, from !== undefined, mode)
  }
  if (from !== undefined) {
    if (!found) return notFound(`${from} is not the address of one of this account's connections`)
    return usable(found, true, mode)
  }
  if (!found) return { refused: 'NO_CONNECTION', message: 'This account has no connection to send through' }
  return usable(found, false, mode)
}

/** The connection chooseConnection gives, or its refusal raised as an AppError. */
export function chosenConnection(
  caller: Chooser,
  from: string | undefined,
  found: SendingConnection | undefined,
  mode: SendMode,
): SendingConnection {
  const choice = chooseConnection(caller, from, found, mode)
  if ('refused' in choice) throw new AppError(choice.refused, choice.message)
  return choice
}

function usable(
  connection: SendingConnection,
  namedByFrom: boolean,
  mode: SendMode,
): SendingConnection | ConnectionRefusal {
  if (connection.disabled) return notFound(`The connection for ${connection.from_address} is disabled`)
  if (connection.paused && mode === 'now') {
    if (namedByFrom) return notFound(`The connection for ${connection.from_address} is paused`)
    return {
      refused: 'CONNECTION_PAUSED',
      message: `The connection for ${connection.from_address} is paused because its provider kept rejecting sends; it resumes by itself`,
    }
  }
  return connection
}

function notFound(message: string): ConnectionRefusal {
  return { refused: 'CONNECTION_NOT_FOUND', message }
}
