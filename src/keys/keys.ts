import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { lockAccount } from '../accounts/accounts.ts'
import { assertBelowPlanLimit } from '../accounts/limits.ts'
import type { Plan } from '../accounts/plans.ts'
import type { Db, Sql } from '../db/sql.ts'
import { standardError } from '../errors.ts'

/** Recognisable in logs and secret scanners; the 32 random bytes after it carry 256 bits. */
export const KEY_PREFIX = 'mr_'
const SHOWN_PREFIX_LENGTH = KEY_PREFIX.length + 6
export const MIN_EXPIRY_DAYS = 7
export const MAX_EXPIRY_DAYS = 365

export type KeyStatus = 'active' | 'expired' | 'revoked' | 'connection_deleted'

export interface ApiKey {
  id: number
  account_id: number
  name: string
  prefix: string
  connection_id: number | null
  expires_at: string | null
  revoked_at: string | null
  status: KeyStatus
  created_at: string
  updated_at: string
}

/** Who a valid key speaks for. */
export interface Caller {
  accountId: number
  keyId: number
  plan: Plan
  /** Set when the key is scoped to one connection. */
  connectionId: number | null
}

function newSecret(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url')
}

function sha256(secret: string): Buffer {
  return createHash('sha256').update(secret).digest()
}

const KEY_COLUMNS = (sql: Db) => sql`
  id, account_id, name, prefix, connection_id,
  api_timestamp(expires_at) as expires_at, api_timestamp(revoked_at) as revoked_at,
  case
    when revoked_at is not null then 'revoked'
    when scoped and connection_id is null then 'connection_deleted'
    when expires_at <= now() then 'expired'
    else 'active'
  end as status,
  api_timestamp(created_at) as created_at, api_timestamp(updated_at) as updated_at`

export interface CreateKeyInput {
  accountId: number
  name: string
  connectionId?: number
  expiresInDays?: number
}

export async function createKey(
  sql: Sql,
  input: CreateKeyInput,
): Promise<{
  id: number
  name: string
  key: string
  connection_id: number | null
  expires_at: string | null
}> {
  const name = input.name.trim()
  if (!name) throw standardError(400, 'INVALID_NAME', 'a key needs a name')
  const days = input.expiresInDays
  if (days !== undefined && !(Number.isInteger(days) && days >= MIN_EXPIRY_DAYS && days <= MAX_EXPIRY_DAYS)) {
    throw standardError(
      400,
      'INVALID_EXPIRY',
      `expiry must be a whole number of days from ${MIN_EXPIRY_DAYS} to ${MAX_EXPIRY_DAYS}, or never`,
    )
  }
  const secret = newSecret()
  return sql.begin(async (tx) => {
    const plan = await lockAccount(tx, input.accountId)
    const [{ used } = { used: 0 }] = await tx<{ used: number }[]>`
      select count(*)::int as used from api_keys where account_id = ${input.accountId} and revoked_at is null`
    assertBelowPlanLimit(plan, 'apiKeys', used)
    if (input.connectionId !== undefined) await assertOwnConnection(tx, input.accountId, input.connectionId)
    const [row] = await tx<{ id: number; connection_id: number | null; expires_at: string | null }[]>`
      insert into api_keys (account_id, name, prefix, secret_sha256, scoped, connection_id, expires_at)
      values (${input.accountId}, ${name}, ${secret.slice(0, SHOWN_PREFIX_LENGTH)}, ${sha256(secret)},
              ${input.connectionId !== undefined}, ${input.connectionId ?? null},
              ${days === undefined ? null : sql`now() + make_interval(days => ${days})`})
      returning id, connection_id, api_timestamp(expires_at) as expires_at`
    if (!row) throw new Error('insert returned no row')
    return { id: row.id, name, key: secret, connection_id: row.connection_id, expires_at: row.expires_at }
  })
}

export async function listKeys(sql: Sql, accountId: number): Promise<ApiKey[]> {
  return sql<ApiKey[]>`select ${KEY_COLUMNS(sql)} from api_keys where account_id = ${accountId} order by id`
}

/** A new secret for the same key; the old one stops working at once. */
export async function rotateKey(sql: Sql, keyId: number): Promise<{ id: number; key: string }> {
  const secret = newSecret()
  const [row] = await sql<{ id: number }[]>`
    update api_keys set secret_sha256 = ${sha256(secret)}, prefix = ${secret.slice(0, SHOWN_PREFIX_LENGTH)},
      updated_at = now()
    where id = ${keyId} and revoked_at is null
    returning id`
  if (!row) throw await keyNotUsable(sql, keyId)
  return { id: row.id, key: secret }
}

export async function revokeKey(sql: Sql, keyId: number): Promise<ApiKey> {
  const [row] = await sql<ApiKey[]>`
    update api_keys set revoked_at = coalesce(revoked_at, now()), updated_at = now()
    where id = ${keyId}
    returning ${KEY_COLUMNS(sql)}`
  if (!row) throw keyNotFound(keyId)
  return row
}

/** Scopes the key to one of its account's connections, or (null) to all of them. */
export async function scopeKey(sql: Sql, keyId: number, connectionId: number | null): Promise<ApiKey> {
  return sql.begin(async (tx) => {
    const [key] = await tx<
      { account_id: number }[]
    >`select account_id from api_keys where id = ${keyId} for update`
    if (!key) throw keyNotFound(keyId)
    if (connectionId !== null) await assertOwnConnection(tx, key.account_id, connectionId)
    const [row] = await tx<ApiKey[]>`
      update api_keys set scoped = ${connectionId !== null}, connection_id = ${connectionId}, updated_at = now()
      where id = ${keyId}
      returning ${KEY_COLUMNS(tx)}`
    return row as ApiKey
  })
}

/**
 * The caller a bearer token speaks for, or undefined for any token that must be refused:
 * unknown, revoked, expired, or scoped to a connection that was deleted.
 */
export async function authenticate(sql: Sql, token: string): Promise<Caller | undefined> {
  if (!token.startsWith(KEY_PREFIX)) return undefined
  const digest = sha256(token)
  const [row] = await sql<
    { id: number; account_id: number; plan: Plan; connection_id: number | null; secret_sha256: Buffer }[]
  >`
    select k.id, k.account_id, a.plan, k.connection_id, k.secret_sha256
    from api_keys k join accounts a on a.id = k.account_id
    where k.secret_sha256 = ${digest}
      and k.revoked_at is null
      and (k.expires_at is null or k.expires_at > now())
      and (not k.scoped or k.connection_id is not null)`
  // The index lookup already matched; comparing again in constant time keeps the check honest
  // even if the lookup ever changes to a prefix search.
  if (!row || !timingSafeEqual(row.secret_sha256, digest)) return undefined
  return { accountId: row.account_id, keyId: row.id, plan: row.plan, connectionId: row.connection_id }
}

async function assertOwnConnection(tx: Db, accountId: number, connectionId: number): Promise<void> {
  const [own] = await tx`select 1 from connections where id = ${connectionId} and account_id = ${accountId}`
  if (!own) {
    throw standardError(
      404,
      'CONNECTION_NOT_FOUND',
      `account ${accountId} has no connection with id ${connectionId}`,
    )
  }
}

async function keyNotUsable(sql: Sql, keyId: number) {
  const [row] = await sql`select 1 from api_keys where id = ${keyId}`
  return row
    ? standardError(400, 'KEY_REVOKED', `key ${keyId} is revoked; create a new key`)
    : keyNotFound(keyId)
}

function keyNotFound(id: number) {
  return standardError(404, 'KEY_NOT_FOUND', `no API key with id ${id}`)
}
