import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { lockAccount } from '../accounts/accounts.ts'
import { assertBelowPlanLimit } from '../accounts/limits.ts'
import { AppError } from '../app-error.ts'
import {
  type ApiKeyRow,
  countUnrevokedKeys,
  insertKey,
  type KeyOwner,
  keyExists,
  lockKeyAccount,
  markRevoked,
  replaceSecret,
  selectKeys,
  setScope,
  usableKeysByHash,
} from '../db/api-keys.ts'
import { ownsConnection } from '../db/connections.ts'
import type { Db, Sql } from '../db/sql.ts'
import type { Caller } from './caller.ts'

export type ApiKey = ApiKeyRow

/** Recognisable in logs and secret scanners; the 32 random bytes after it carry 256 bits. */
export const KEY_PREFIX = 'mr_'
const SHOWN_PREFIX_LENGTH = KEY_PREFIX.length + 6
const MIN_EXPIRY_DAYS = 7
const MAX_EXPIRY_DAYS = 365

function newSecret(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url')
}

/** What the database keeps of a key's secret, and looks it up by. */
export function sha256(secret: string): Buffer {
  return createHash('sha256').update(secret).digest()
}

export interface CreateKeyInput {
  accountId: number
  name: string
  connectionId?: number
  expiresInDays?: number
}

export interface CreatedKey {
  id: number
  name: string
  /** The full secret: shown once, never stored. */
  key: string
  connection_id: number | null
  expires_at: string | null
}

export async function createKey(sql: Sql, input: CreateKeyInput): Promise<CreatedKey> {
  const name = input.name.trim()
  if (!name) throw new AppError('INVALID_NAME', 'a key needs a name')
  const days = input.expiresInDays
  if (days !== undefined && !(Number.isInteger(days) && days >= MIN_EXPIRY_DAYS && days <= MAX_EXPIRY_DAYS)) {
    throw new AppError(
      'INVALID_EXPIRY',
      `expiry must be a whole number of days from ${MIN_EXPIRY_DAYS} to ${MAX_EXPIRY_DAYS}, or never`,
    )
  }
  const secret = newSecret()
  return sql.begin(async (tx) => {
    const plan = await lockAccount(tx, input.accountId)
    assertBelowPlanLimit(
      { accountId: input.accountId, plan },
      'apiKeys',
      await countUnrevokedKeys(tx, input.accountId),
    )
    if (input.connectionId !== undefined) await assertOwnConnection(tx, input.accountId, input.connectionId)
    const row = await insertKey(tx, {
      accountId: input.accountId,
      name,
      prefix: secret.slice(0, SHOWN_PREFIX_LENGTH),
      secretSha256: sha256(secret),
      connectionId: input.connectionId ?? null,
      expiresInDays: days ?? null,
    })
    return { id: row.id, name, key: secret, connection_id: row.connection_id, expires_at: row.expires_at }
  })
}

export function listKeys(db: Db, accountId: number): Promise<ApiKey[]> {
  return selectKeys(db, accountId)
}

/** A new secret for the same key; the old one stops working at once. */
export async function rotateKey(db: Db, keyId: number): Promise<{ id: number; key: string }> {
  const secret = newSecret()
  const row = await replaceSecret(db, keyId, secret.slice(0, SHOWN_PREFIX_LENGTH), sha256(secret))
  if (!row) {
    throw (await keyExists(db, keyId))
      ? new AppError('KEY_REVOKED', `key ${keyId} is revoked; create a new key`)
      : keyNotFound(keyId)
  }
  return { id: row.id, key: secret }
}

export async function revokeKey(db: Db, keyId: number): Promise<ApiKey> {
  const row = await markRevoked(db, keyId)
  if (!row) throw keyNotFound(keyId)
  return row
}

/** Scopes the key to one of its account's connections, or (null) to all of them. */
export async function scopeKey(sql: Sql, keyId: number, connectionId: number | null): Promise<ApiKey> {
  return sql.begin(async (tx) => {
    const accountId = await lockKeyAccount(tx, keyId)
    if (accountId === undefined) throw keyNotFound(keyId)
    if (connectionId !== null) await assertOwnConnection(tx, accountId, connectionId)
    const row = await setScope(tx, keyId, connectionId)
    if (!row) throw keyNotFound(keyId)
    return row
  })
}

/** Finds the usable key with this SHA-256 digest, if any (see usableKeysByHash). */
export type KeyLookup = (digest: Buffer) => Promise<KeyOwner | undefined>

/**
 * The caller a bearer token speaks for, or undefined for any token that must be refused:
 * unknown, revoked, expired, or scoped to a connection that was deleted. Its key is found by
 * `lookUp`: the API's requests share one statement with the others then arriving (CallerCache,
 * src/fast-path/caller-cache.ts); by default, a statement of its own.
 */
export async function authenticate(
  db: Db,
  token: string,
  lookUp: KeyLookup = async (digest) => (await usableKeysByHash(db, [digest]))[0],
): Promise<Caller | undefined> {
  if (!token.startsWith(KEY_PREFIX)) return undefined
  const digest = sha256(token)
  const row = await lookUp(digest)
  // The index lookup already matched; comparing again in constant time keeps the check honest
  // even if the lookup ever changes to a prefix search.
  if (!row || !timingSafeEqual(row.secret_sha256, digest)) return undefined
  return { accountId: row.account_id, keyId: row.id, plan: row.plan, connectionId: row.connection_id }
}

async function assertOwnConnection(tx: Db, accountId: number, connectionId: number): Promise<void> {
  if (!(await ownsConnection(tx, accountId, connectionId))) {
    throw new AppError('UNKNOWN_CONNECTION', `account ${accountId} has no connection with id ${connectionId}`)
  }
}

function keyNotFound(id: number) {
  return new AppError('KEY_NOT_FOUND', `no API key with id ${id}`)
}
