import type { Plan } from '../plans.ts'
import type { Db, Fragment } from './sql.ts'

export type KeyStatus = 'active' | 'expired' | 'revoked' | 'connection_deleted'

/** A key as listings show it: never its secret. */
export interface ApiKeyRow {
  id: number
  account_id: number
  name: string
  prefix: string
  connection_id: number | null
  expires_at: string | null
  revoked_at: string | null
  /** When it last authenticated a request, to the minute. */
  last_used_at: string | null
  status: KeyStatus
  created_at: string
  updated_at: string
}

const COLUMNS = (db: Db) => db`
  id, account_id, name, prefix, connection_id,
  api_timestamp(expires_at) as expires_at, api_timestamp(revoked_at) as revoked_at,
  api_timestamp(last_used_at) as last_used_at,
  case
    when revoked_at is not null then 'revoked'
    when scoped and connection_id is null then 'connection_deleted'
    when expires_at <= mailroom_now() then 'expired'
    else 'active'
  end as status,
  api_timestamp(created_at) as created_at, api_timestamp(updated_at) as updated_at`

/** Keys that count toward the plan's limit: every key not revoked. */
export async function countUnrevokedKeys(db: Db, accountId: number): Promise<number> {
  const [row] = await db<{ used: number }[]>`
    select count(*)::int as used from api_keys where account_id = ${accountId} and revoked_at is null`
  return row?.used ?? 0
}

export interface NewKey {
  accountId: number
  name: string
  prefix: string
  secretSha256: Buffer
  connectionId: number | null
  expiresInDays: number | null
}

export async function insertKey(
  db: Db,
  key: NewKey,
): Promise<{ id: number; connection_id: number | null; expires_at: string | null }> {
  const [row] = await db<{ id: number; connection_id: number | null; expires_at: string | null }[]>`
    insert into api_keys (account_id, name, prefix, secret_sha256, scoped, connection_id, expires_at)
    values (${key.accountId}, ${key.name}, ${key.prefix}, ${key.secretSha256}, ${key.connectionId !== null},
            ${key.connectionId}, ${key.expiresInDays === null ? null : db`mailroom_now() + make_interval(days => ${key.expiresInDays})`})
    returning id, connection_id, api_timestamp(expires_at) as expires_at`
  if (!row) throw new Error('the key was not recorded')
  return row
}

export function selectKeys(db: Db, accountId: number): Promise<ApiKeyRow[]> {
  return db<ApiKeyRow[]>`select ${COLUMNS(db)} from api_keys where account_id = ${accountId} order by id`
}

/** The key's account (locked for the caller's transaction), or undefined. */
export async function lockKeyAccount(tx: Db, keyId: number): Promise<number | undefined> {
  const [row] = await tx<
    { account_id: number }[]
  >`select account_id from api_keys where id = ${keyId} for update`
  return row?.account_id
}

/** A new secret for a key that is not revoked; undefined when there is no such key. */
export async function replaceSecret(
  db: Db,
  keyId: number,
  prefix: string,
  secretSha256: Buffer,
): Promise<{ id: number } | undefined> {
  const [row] = await db<{ id: number }[]>`
    update api_keys set secret_sha256 = ${secretSha256}, prefix = ${prefix}, updated_at = mailroom_now()
    where id = ${keyId} and revoked_at is null
    returning id`
  return row
}

export async function keyExists(db: Db, keyId: number): Promise<boolean> {
  const [row] = await db`select 1 from api_keys where id = ${keyId}`
  return row !== undefined
}

export async function markRevoked(db: Db, keyId: number): Promise<ApiKeyRow | undefined> {
  const [row] = await db<ApiKeyRow[]>`
    update api_keys set revoked_at = coalesce(revoked_at, mailroom_now()), updated_at = mailroom_now()
    where id = ${keyId}
    returning ${COLUMNS(db)}`
  return row
}

export async function setScope(
  db: Db,
  keyId: number,
  connectionId: number | null,
): Promise<ApiKeyRow | undefined> {
  const [row] = await db<ApiKeyRow[]>`
    update api_keys set scoped = ${connectionId !== null}, connection_id = ${connectionId}, updated_at = mailroom_now()
    where id = ${keyId}
    returning ${COLUMNS(db)}`
  return row
}

/** What a usable key (not revoked, not expired, its connection not deleted) says of its caller. */
export interface KeyOwner {
  id: number
  account_id: number
  plan: Plan
  connection_id: number | null
  secret_sha256: Buffer
}

/** A condition on the key row `k`: not revoked, not expired, its connection (if scoped) not deleted. */
function usable(db: Db): Fragment {
  return db`k.revoked_at is null and (k.expires_at is null or k.expires_at > mailroom_now())
    and (not k.scoped or k.connection_id is not null)`
}

/** Columns or values, as SQL, of what a request cached of its key (see keyStillSays). */
export interface CachedKeyInSql {
  keyId: Fragment
  /** The token's SHA-256, as bytea. */
  digest: Fragment
  accountId: Fragment
  plan: Fragment
  connectionId: Fragment
}

/**
 * A condition: the key is still usable and still says what was cached of it (its hash,
 * account, the account's plan, its connection), read in the statement that relies on it.
 */
export function keyStillSays(db: Db, cached: CachedKeyInSql): Fragment {
  return db`exists (
    select from api_keys k join accounts a on a.id = k.account_id
    where k.id = ${cached.keyId} and k.secret_sha256 = ${cached.digest} and k.account_id = ${cached.accountId}
      and a.plan = ${cached.plan} and k.connection_id is not distinct from ${cached.connectionId} and ${usable(db)})`
}

/**
 * For each hash, in order, the usable key with that hash, noted as used now: one statement for
 * any number of requests (a round of them: see authenticate). In the same round trip as the
 * lookup, and written at most once a minute per key, so that a busy key costs no write per
 * request.
 */
export async function usableKeysByHash(db: Db, hashes: Buffer[]): Promise<(KeyOwner | undefined)[]> {
  const rows = await db<(KeyOwner & { n: number })[]>`
    with usable as (
      select asked.n, k.id, k.account_id, a.plan, k.connection_id, k.secret_sha256, k.last_used_at
      from unnest(${hashes.map((h) => h.toString('hex'))}::text[]) with ordinality as asked(hash, n)
      join api_keys k on k.secret_sha256 = decode(asked.hash, 'hex')
      join accounts a on a.id = k.account_id
      where ${usable(db)}
    ), used as (
      update api_keys set last_used_at = mailroom_now()
      where id in (select id from usable where last_used_at is null or last_used_at <= mailroom_now() - interval '1 minute')
    )
    select n::int, id, account_id, plan, connection_id, secret_sha256 from usable`
  const found = new Map(rows.map(({ n, ...owner }) => [n, owner]))
  return hashes.map((_, i) => found.get(i + 1))
}
