import { randomBytes, timingSafeEqual } from 'node:crypto'
import { AppError } from '../app-error.ts'
import { selectAccount } from '../db/accounts.ts'
import { anyPasswordSet, passwordHash, storePasswordHash } from '../db/passwords.ts'
import { deleteSessionsOf } from '../db/sessions.ts'
import type { Db, Sql } from '../db/sql.ts'
import { type Account, createAccount } from './accounts.ts'
import { scryptThread } from './scrypt-thread.ts'

/** The specification's bounds, in characters; no other composition rules. */
export const PASSWORD_LENGTH = { min: 12, max: 1024 } as const

/** OWASP's scrypt parameters: N = 2^17, r = 8, p = 1 (128 MiB and a few hundred ms per hash). */
const COST = { log2N: 17, r: 8, p: 1 }
const KEY_BYTES = 64
const SALT_BYTES = 16
/** scrypt needs 128 * N * r bytes; Node refuses above its default of 32 MiB unless told. */
const MAX_MEMORY = 256 * 1024 * 1024
/**
 * Hashes at once, and hashes waiting for their turn at most. Each takes 128 MiB and a core, on
 * a thread of the lowest priority (scrypt-thread.ts): one at a time keeps a burst of sign-ins
 * within the service's memory budget (two took it past 400 MiB beside other load). The last in
 * line waits for all those ahead (about a second each), so a longer line would only make every
 * sign-in late, the owner's among them; past it, "try again in a moment".
 */
export const HASH_SLOTS = { running: 1, waiting: 4 } as const

let hashing = 0
const waitingForSlot: (() => void)[] = []

async function inHashSlot<T>(work: () => Promise<T>): Promise<T> {
  if (hashing < HASH_SLOTS.running) hashing++
  else if (waitingForSlot.length >= HASH_SLOTS.waiting) {
    throw new AppError(
      'PASSWORD_CHECKS_BUSY',
      'Too many passwords are being checked at the moment. Try again in a moment.',
      { details: { retryAfter: 1 } },
    )
  } else await new Promise<void>((resolve) => waitingForSlot.push(resolve))
  try {
    return await work()
  } finally {
    // The slot passes straight to the next in line, or is given back.
    const next = waitingForSlot.shift()
    if (next) next()
    else hashing--
  }
}

function derive(password: string, salt: Buffer, cost: typeof COST): Promise<Buffer> {
  const options = { N: 2 ** cost.log2N, r: cost.r, p: cost.p, maxmem: MAX_MEMORY }
  return inHashSlot(() => scryptThread.derive(password.normalize('NFC'), salt, KEY_BYTES, options))
}

/** `scrypt$ln=17,r=8,p=1$<salt>$<key>` (base64): the parameters travel with the hash. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES)
  const key = await derive(password, salt, COST)
  return `scrypt$ln=${COST.log2N},r=${COST.r},p=${COST.p}$${salt.toString('base64')}$${key.toString('base64')}`
}

const STORED = /^scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+)$/

/**
 * Whether `password` is the one `stored` was made from. Without a stored hash (no such account,
 * or no password set) the same work is done against a made-up one, so that the answer takes as
 * long either way.
 */
export async function verifyPassword(password: string, stored: string | null | undefined): Promise<boolean> {
  const match = STORED.exec(stored ?? '')
  const cost = match ? { log2N: Number(match[1]), r: Number(match[2]), p: Number(match[3]) } : COST
  const salt = match ? Buffer.from(match[4] as string, 'base64') : randomBytes(SALT_BYTES)
  const expected = match ? Buffer.from(match[5] as string, 'base64') : Buffer.alloc(KEY_BYTES)
  const key = await derive(password, salt, cost)
  return match !== null && key.length === expected.length && timingSafeEqual(key, expected)
}

function checkPassword(password: string): void {
  const length = [...password].length
  if (length < PASSWORD_LENGTH.min || length > PASSWORD_LENGTH.max) {
    throw new AppError(
      'INVALID_PASSWORD',
      `A password must be ${PASSWORD_LENGTH.min} to ${PASSWORD_LENGTH.max} characters long (this one has ${length})`,
    )
  }
}

/**
 * `mailroom account set-password`: the account's new dashboard password. Every session of the
 * account ends (whoever had signed in must sign in again).
 */
export async function setPassword(sql: Sql, accountId: number, password: string): Promise<Account> {
  checkPassword(password)
  const hash = await hashPassword(password)
  return sql.begin(async (tx) => {
    if (!(await storePasswordHash(tx, accountId, hash))) {
      throw new AppError('ACCOUNT_NOT_FOUND', `no account with id ${accountId}`)
    }
    await deleteSessionsOf(tx, accountId)
    const account = await selectAccount(tx, accountId)
    if (!account) throw new Error(`account ${accountId} vanished`)
    return account
  })
}

/** `mailroom account create --password-stdin`: the account and its password, or neither. */
export async function createAccountWithPassword(
  sql: Sql,
  input: { email: string; plan?: string; password: string },
): Promise<Account> {
  checkPassword(input.password)
  const hash = await hashPassword(input.password)
  return sql.begin(async (tx) => {
    const account = await createAccount(tx, { email: input.email, plan: input.plan })
    await storePasswordHash(tx, account.id, hash)
    return account
  })
}

/**
 * The owner's change of password in the dashboard: the current one first. Every session of the
 * account ends; the caller starts a new one for the browser that made the change.
 */
export async function changePassword(
  sql: Sql,
  accountId: number,
  change: { current: string; next: string },
): Promise<void> {
  checkPassword(change.next)
  if (!(await verifyPassword(change.current, await passwordHash(sql, accountId)))) {
    throw new AppError('WRONG_PASSWORD', 'The current password is not right')
  }
  const hash = await hashPassword(change.next)
  await sql.begin(async (tx) => {
    await storePasswordHash(tx, accountId, hash)
    await deleteSessionsOf(tx, accountId)
  })
}

/** Whether any account can sign in yet: a new install has none, and says how to make one. */
export function anyoneCanSignIn(db: Db): Promise<boolean> {
  return anyPasswordSet(db)
}
