import { lockAccount } from '../accounts/accounts.ts'
import { assertBelowPlanLimit } from '../accounts/limits.ts'
import { AppError } from '../app-error.ts'
import type { Config } from '../config.ts'
import {
  type ConnectionView,
  changeConnection,
  connectionCount,
  connectionLogin,
  deleteConnectionRow,
  disabled,
  insertConnection,
  pausedFor,
  QUOTA_PERIODS,
  type QuotaPeriod,
  resumed,
  type SmtpPort,
  selectConnections,
  settings,
} from '../db/connections.ts'
import { scheduleQueueRun } from '../db/jobs.ts'
import { failQueuedOfConnection, queuedDueNow } from '../db/queue.ts'
import type { Db, Fragment, Sql } from '../db/sql.ts'
import { EmailAddressSchema } from '../generated/routes.ts'
import { sealPassword } from '../smtp/secret-box.ts'
import { type SmtpLogin, verifySmtpLogin } from '../smtp/transport.ts'

export type { ConnectionView }

/** The only ports a connection may use: 465 with TLS, 587 and 2525 with STARTTLS. */
const SMTP_PORTS: readonly SmtpPort[] = [465, 587, 2525]
const DEFAULT_RATE = 60
/** A thousand a second: the highest rate a connection may have. */
const MAX_RATE = 60_000

/** What managing connections needs: the database, the key that seals passwords, and the SMTP host policy. */
export interface ConnectionDeps {
  sql: Sql
  secret: string
  config: Pick<Config, 'allowPrivateSmtpHosts' | 'ehloName'>
}

/** An address as the API takes one: a `from` the API would refuse could never name its connection. */
function isAddress(value: string): boolean {
  return EmailAddressSchema.safeParse(value).success
}

export interface QuotaInput {
  quota: number
  per: string
}

export interface AddConnectionInput {
  accountId: number
  host: string
  port: number
  username: string
  password: string
  from?: string
  quota?: QuotaInput
  rate?: number
}

export async function addConnection(
  deps: ConnectionDeps,
  input: AddConnectionInput,
): Promise<ConnectionView> {
  const from = input.from ?? (isAddress(input.username) ? input.username : undefined)
  if (!from) throw invalid('the sending address (from) is required when the username is not an email address')
  if (!isAddress(from)) throw invalid(`"${from}" is not an email address`)
  const login = {
    host: input.host.trim(),
    port: checkPort(input.port),
    username: input.username,
    password: input.password,
  }
  const quota = input.quota ? checkQuota(input.quota) : null
  const rate = checkRate(input.rate ?? DEFAULT_RATE)
  // Refuse on the cheap checks before the slow SMTP round trip, then again under the lock.
  await assertCanAdd(deps.sql, input.accountId, from)
  await verifyLogin(deps, login)
  return deps.sql.begin(async (tx) => {
    await assertCanAdd(tx, input.accountId, from)
    return insertConnection(tx, {
      accountId: input.accountId,
      from,
      ...login,
      passwordSealed: sealPassword(deps.secret, login.password),
      quota,
      rate,
    })
  })
}

async function assertCanAdd(db: Db, accountId: number, from: string): Promise<void> {
  const plan = await lockAccount(db, accountId)
  const { used, taken } = await connectionCount(db, accountId, from)
  if (taken)
    throw new AppError('CONNECTION_EXISTS', `account ${accountId} already has a connection for ${from}`)
  assertBelowPlanLimit({ accountId, plan }, 'connections', used)
}

async function verifyLogin(deps: ConnectionDeps, login: SmtpLogin): Promise<void> {
  try {
    await verifySmtpLogin(login, deps.config.allowPrivateSmtpHosts, deps.config.ehloName)
  } catch (error) {
    throw new AppError('SMTP_LOGIN_FAILED', error instanceof Error ? error.message : String(error), {
      cause: error,
    })
  }
}

export function listConnections(db: Db, accountId: number): Promise<ConnectionView[]> {
  return selectConnections(db, accountId)
}

export interface UpdateConnectionInput {
  quota?: QuotaInput | null
  rate?: number
  password?: string
}

/** New quota, rate or password (tested against the server first). */
export async function updateConnection(
  deps: ConnectionDeps,
  id: number,
  input: UpdateConnectionInput,
): Promise<ConnectionView> {
  const current = await connectionLogin(deps.sql, id)
  if (!current) throw connectionNotFound(id)
  const quota = input.quota ? checkQuota(input.quota) : input.quota
  const rate = input.rate === undefined ? undefined : checkRate(input.rate)
  if (input.password !== undefined) await verifyLogin(deps, { ...current, password: input.password })
  const passwordSealed = input.password === undefined ? undefined : sealPassword(deps.secret, input.password)
  return change(deps.sql, id, (db) => settings(db, { quota, rate, passwordSealed }))
}

/** Disabling holds the connection's queued mail; enabling sends it on. */
export function disableConnection(sql: Sql, id: number, value: boolean): Promise<ConnectionView> {
  return change(sql, id, (db) => disabled(db, value))
}

/** Operator pause: for `minutes`, or until resumed when no duration is given. */
export function pauseConnection(sql: Sql, id: number, minutes?: number): Promise<ConnectionView> {
  if (minutes !== undefined && !(Number.isInteger(minutes) && minutes > 0)) {
    throw invalid('a pause lasts a positive whole number of minutes')
  }
  return change(sql, id, (db) => pausedFor(db, minutes))
}

/** Resuming lets all the waiting mail go at once, whatever back-off each message was waiting out. */
export function resumeConnection(sql: Sql, id: number): Promise<ConnectionView> {
  return change(sql, id, resumed, (tx) => queuedDueNow(tx, id))
}

/**
 * Deletes a connection, failing the mail still queued on it; when it was the default, the
 * oldest remaining one takes its place.
 */
export async function deleteConnection(
  sql: Sql,
  id: number,
): Promise<{ deleted: true; new_default_id: number | null }> {
  return sql.begin(async (tx) => {
    await failQueuedOfConnection(tx, id)
    const gone = await deleteConnectionRow(tx, id)
    if (!gone) throw connectionNotFound(id)
    return { deleted: true as const, new_default_id: gone.newDefaultId }
  })
}

/**
 * Applies a change, and gives the connection's queue a run: whatever changed (enabled, resumed,
 * a new quota or rate) may let waiting mail go now; a run that finds it still held waits again.
 */
async function change(
  sql: Sql,
  id: number,
  assignment: (db: Db) => Fragment,
  andThen?: (tx: Db) => Promise<void>,
): Promise<ConnectionView> {
  return sql.begin(async (tx) => {
    const row = await changeConnection(tx, id, assignment(tx))
    if (!row) throw connectionNotFound(id)
    await andThen?.(tx)
    await scheduleQueueRun(tx, id)
    return row
  })
}

function checkPort(port: number): SmtpPort {
  const allowed = SMTP_PORTS.find((p) => p === port)
  if (allowed === undefined) throw invalid(`port must be 465 (TLS), 587 or 2525 (STARTTLS), not ${port}`)
  return allowed
}

function checkQuota({ quota, per }: QuotaInput): { quota: number; per: QuotaPeriod } {
  if (!Number.isInteger(quota) || quota < 1)
    throw invalid('the quota must be a positive whole number of emails')
  const period = QUOTA_PERIODS.find((p) => p === per)
  if (!period) throw invalid('the quota is per "day" or per "hour"')
  return { quota, per: period }
}

function checkRate(rate: number): number {
  if (!Number.isInteger(rate) || rate < 1 || rate > MAX_RATE) {
    throw invalid(`the rate must be a whole number of messages per minute from 1 to ${MAX_RATE}`)
  }
  return rate
}

function invalid(message: string) {
  return new AppError('INVALID_CONNECTION', message)
}

function connectionNotFound(id: number) {
  return new AppError('UNKNOWN_CONNECTION', `no connection with id ${id}`)
}
