import type { Plan } from '../accounts/plans.ts'
import type { Db } from '../db/sql.ts'
import { standardError } from '../errors.ts'
import type { Caller } from '../keys/keys.ts'
import type { QuotaPeriod } from './connections.ts'
import type { SmtpPort } from './smtp-transport.ts'

/** Everything a send needs of its connection, read in one query. */
export interface SendingConnection {
  id: number
  account_id: number
  from_address: string
  host: string
  port: SmtpPort
  username: string
  password_encrypted: string
  quota: number | null
  quota_period: QuotaPeriod | null
  rate: number
  disabled: boolean
  paused: boolean
  is_default: boolean
}

/**
 * `now`: the caller waits for the SMTP server (POST /send); a paused connection is refused.
 * `queued`: the mail waits its turn in the background; a paused connection is accepted.
 */
export type SendMode = 'now' | 'queued'

const COLUMNS = (sql: Db) => sql`
  id, account_id, from_address, host, port, username, password_encrypted, quota, quota_period, rate,
  disabled, coalesce(paused_until > mailroom_now(), false) as paused, is_default`

/** A connection as its queue's runs send through it, with its account's plan; undefined once deleted. */
export async function queueConnection(sql: Db, id: number): Promise<QueueConnection | undefined> {
  const [row] = await sql<QueueConnection[]>`
    select ${COLUMNS(sql)}, (select plan from accounts a where a.id = c.account_id) as plan
    from connections c where id = ${id}`
  return row
}

export type QueueConnection = SendingConnection & { plan: Plan }

/**
 * Chooses the connection a send goes through, with the rulings' order and errors: a key scoped
 * to a connection wins; otherwise `from` (case-insensitive); otherwise the default connection.
 */
export async function selectConnection(
  sql: Db,
  caller: Caller,
  from: string | undefined,
  mode: SendMode,
): Promise<SendingConnection> {
  if (caller.connectionId !== null) {
    const [scoped] = await sql<SendingConnection[]>`
      select ${COLUMNS(sql)} from connections where id = ${caller.connectionId}`
    // Authentication already refused keys whose connection is gone; a race with a delete lands here.
    if (!scoped) throw notFound('The connection this API key is scoped to no longer exists')
    if (from !== undefined && from.toLowerCase() !== scoped.from_address.toLowerCase()) {
      throw standardError(
        403,
        'CONNECTION_SCOPE_MISMATCH',
        `This API key may only send from ${scoped.from_address}, not ${from}`,
      )
    }
    return usable(scoped, from !== undefined, mode)
  }
  if (from !== undefined) {
    const [named] = await sql<SendingConnection[]>`
      select ${COLUMNS(sql)} from connections
      where account_id = ${caller.accountId} and lower(from_address) = lower(${from})`
    if (!named) throw notFound(`${from} is not the address of one of this account's connections`)
    return usable(named, true, mode)
  }
  const [fallback] = await sql<SendingConnection[]>`
    select ${COLUMNS(sql)} from connections where account_id = ${caller.accountId} and is_default`
  if (!fallback) throw standardError(403, 'NO_CONNECTION', 'This account has no connection to send through')
  return usable(fallback, false, mode)
}

function usable(connection: SendingConnection, namedByFrom: boolean, mode: SendMode): SendingConnection {
  if (connection.disabled) throw notFound(`The connection for ${connection.from_address} is disabled`)
  if (connection.paused && mode === 'now') {
    if (namedByFrom) throw notFound(`The connection for ${connection.from_address} is paused`)
    throw standardError(
      403,
      'CONNECTION_PAUSED',
      `The connection for ${connection.from_address} is paused because its provider kept rejecting sends; it resumes by itself`,
    )
  }
  return connection
}

function notFound(message: string) {
  return standardError(403, 'CONNECTION_NOT_FOUND', message)
}
