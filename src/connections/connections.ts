import { lockAccount } from '../accounts/accounts.ts'
import { assertBelowPlanLimit } from '../accounts/limits.ts'
import type { Db, Fragment, Sql } from '../db/sql.ts'
import { standardError } from '../errors.ts'
import { failQueuedOfConnection } from '../sending/queue.ts'
import type { Services } from '../services.ts'
import { scheduleQueueRun } from '../worker/jobs.ts'
import { sealPassword } from './secret-box.ts'
import { SMTP_PORTS, type SmtpLogin, type SmtpPort, verifySmtpLogin } from './smtp-transport.ts'

export const QUOTA_PERIODS = ['day', 'hour'] as const
export type QuotaPeriod = (typeof QUOTA_PERIODS)[number]
export const DEFAULT_RATE = 60
export const MAX_RATE = 6000

export type ConnectionStatus = 'active' | 'disabled' | 'paused'

/** A connection as the operator sees it; the password never leaves the database. */
export interface ConnectionView {
  id: number
  account_id: number
  from: string
  host: string
  port: SmtpPort
  username: string
  quota: number | null
  quota_period: QuotaPeriod | null
  rate: number
  is_default: boolean
  status: ConnectionStatus
  paused_until: string | null
  created_at: string
  updated_at: string
}

const VIEW_COLUMNS = (sql: Db) => sql`
  id, account_id, from_address as "from", host, port, username, quota, quota_period, rate, is_default,
  case when disabled then 'disabled' when paused_until > mailroom_now() then 'paused' else 'active' end as status,
  case when paused_until > mailroom_now() then api_timestamp(paused_until) end as paused_until,
  api_timestamp(created_at) as created_at, api_timestamp(updated_at) as updated_at`

const ADDRESS = /^[^\s@<>",]+@[^\s@<>",]+\.[^\s@<>",]+$/

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

export async function addConnection(services: Services, input: AddConnectionInput): Promise<ConnectionView> {
  const from = input.from ?? (ADDRESS.test(input.username) ? input.username : undefined)
  if (!from) throw invalid('--from is required when the username is not an email address')
  if (!ADDRESS.test(from)) throw invalid(`"${from}" is not an email address`)
  const login = {
    host: input.host.trim(),
    port: checkPort(input.port),
    username: input.username,
    password: input.password,
  }
  const quota = input.quota ? checkQuota(input.quota) : null
  const rate = checkRate(input.rate ?? DEFAULT_RATE)
  const { sql } = services
  // Refuse on the cheap checks before the slow SMTP round trip, then again under the lock.
  await assertCanAdd(sql, input.accountId, from)
  await verifyLogin(services, login)
  return sql.begin(async (tx) => {
    await assertCanAdd(tx, input.accountId, from)
    const [row] = await tx<ConnectionView[]>`
      insert into connections (account_id, from_address, host, port, username, password_encrypted,
                               quota, quota_period, rate, is_default)
      values (${input.accountId}, ${from}, ${login.host}, ${login.port}, ${login.username},
              ${sealPassword(services.secret, login.password)}, ${quota?.quota ?? null}, ${quota?.per ?? null},
              ${rate}, not exists (select 1 from connections where account_id = ${input.accountId}))
      returning ${VIEW_COLUMNS(tx)}`
    return row as ConnectionView
  })
}

async function assertCanAdd(sql: Db, accountId: number, from: string): Promise<void> {
  const plan = await lockAccount(sql, accountId)
  const [{ used, taken } = { used: 0, taken: false }] = await sql<{ used: number; taken: boolean }[]>`
    select count(*)::int as used, coalesce(bool_or(lower(from_address) = lower(${from})), false) as taken
    from connections where account_id = ${accountId}`
  if (taken)
    throw standardError(409, 'CONNECTION_EXISTS', `account ${accountId} already has a connection for ${from}`)
  assertBelowPlanLimit(plan, 'connections', used)
}

async function verifyLogin(services: Services, login: SmtpLogin): Promise<void> {
  try {
    await verifySmtpLogin(login, services.config.allowPrivateSmtpHosts)
  } catch (error) {
    throw standardError(400, 'SMTP_LOGIN_FAILED', error instanceof Error ? error.message : String(error))
  }
}

export async function listConnections(sql: Sql, accountId: number): Promise<ConnectionView[]> {
  return sql<ConnectionView[]>`
    select ${VIEW_COLUMNS(sql)} from connections where account_id = ${accountId} order by id`
}

export interface UpdateConnectionInput {
  quota?: QuotaInput | null
  rate?: number
  password?: string
}

export async function updateConnection(
  services: Services,
  id: number,
  input: UpdateConnectionInput,
): Promise<ConnectionView> {
  const { sql } = services
  const current = await loginOf(services, id)
  const quota = input.quota ? checkQuota(input.quota) : input.quota
  const rate = input.rate === undefined ? undefined : checkRate(input.rate)
  if (input.password !== undefined) await verifyLogin(services, { ...current, password: input.password })
  return setAndReturn(
    sql,
    id,
    sql`
      quota = ${quota === undefined ? sql`quota` : (quota?.quota ?? null)},
      quota_period = ${quota === undefined ? sql`quota_period` : (quota?.per ?? null)},
      rate = ${rate ?? sql`rate`},
      password_encrypted = ${
        input.password === undefined ? sql`password_encrypted` : sealPassword(services.secret, input.password)
      }`,
  )
}

/** Disabling holds the connection's queued mail; enabling sends it on. */
export function disableConnection(sql: Sql, id: number, disabled: boolean): Promise<ConnectionView> {
  return setAndReturn(sql, id, sql`disabled = ${disabled}`)
}

/** Operator pause: for `minutes`, or until resumed when no duration is given. */
export function pauseConnection(sql: Sql, id: number, minutes?: number): Promise<ConnectionView> {
  if (minutes !== undefined && !(Number.isInteger(minutes) && minutes > 0)) {
    throw invalid('--minutes must be a positive whole number')
  }
  const until =
    minutes === undefined
      ? sql`'infinity'::timestamptz`
      : sql`mailroom_now() + make_interval(mins => ${minutes})`
  return setAndReturn(sql, id, sql`paused_until = ${until}`)
}

export function resumeConnection(sql: Sql, id: number): Promise<ConnectionView> {
  return setAndReturn(
    sql,
    id,
    sql`paused_until = null, queue_backoff_until = null, consecutive_failures = 0, pause_streak = 0`,
  )
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
    const [gone] = await tx<{ account_id: number; is_default: boolean }[]>`
      delete from connections where id = ${id} returning account_id, is_default`
    if (!gone) throw connectionNotFound(id)
    if (gone.is_default) {
      const [next] = await tx<{ id: number }[]>`
        update connections set is_default = true, updated_at = now()
        where id = (select id from connections where account_id = ${gone.account_id} order by created_at, id limit 1)
        returning id`
      return { deleted: true as const, new_default_id: next?.id ?? null }
    }
    const [current] = await tx<{ id: number }[]>`
      select id from connections where account_id = ${gone.account_id} and is_default`
    return { deleted: true as const, new_default_id: current?.id ?? null }
  })
}

/**
 * Applies a change, and gives the connection's queue a run: whatever changed (enabled, resumed,
 * a new quota or rate) may let waiting mail go now; a run that finds it still held waits again.
 */
async function setAndReturn(sql: Sql, id: number, assignment: Fragment): Promise<ConnectionView> {
  return sql.begin(async (tx) => {
    const [row] = await tx<ConnectionView[]>`
      update connections set ${assignment}, updated_at = now() where id = ${id} returning ${VIEW_COLUMNS(tx)}`
    if (!row) throw connectionNotFound(id)
    await scheduleQueueRun(tx, id)
    return row
  })
}

async function loginOf(services: Services, id: number): Promise<Omit<SmtpLogin, 'password'>> {
  const [row] = await services.sql<{ host: string; port: SmtpPort; username: string }[]>`
    select host, port, username from connections where id = ${id}`
  if (!row) throw connectionNotFound(id)
  return row
}

function checkPort(port: number): SmtpPort {
  if (!(SMTP_PORTS as readonly number[]).includes(port)) {
    throw invalid(`port must be 465 (TLS), 587 or 2525 (STARTTLS), not ${port}`)
  }
  return port as SmtpPort
}

function checkQuota({ quota, per }: QuotaInput): { quota: number; per: QuotaPeriod } {
  if (!Number.isInteger(quota) || quota < 1) throw invalid('--quota must be a positive whole number')
  if (!(QUOTA_PERIODS as readonly string[]).includes(per)) throw invalid('--per must be "day" or "hour"')
  return { quota, per: per as QuotaPeriod }
}

function checkRate(rate: number): number {
  if (!Number.isInteger(rate) || rate < 1 || rate > MAX_RATE) {
    throw invalid(`--rate must be a whole number of messages per minute from 1 to ${MAX_RATE}`)
  }
  return rate
}

function invalid(message: string) {
  return standardError(400, 'INVALID_CONNECTION', message)
}

function connectionNotFound(id: number) {
  return standardError(404, 'CONNECTION_NOT_FOUND', `no connection with id ${id}`)
}
