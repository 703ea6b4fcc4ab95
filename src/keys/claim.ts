import { Remembered } from '../db/remembered.ts'
import { perPool } from '../db/rounds.ts'
import type { Sql } from '../db/sql.ts'
import { AppError } from '../errors.ts'
import type { Caller } from './caller.ts'
import { authenticate, sha256 } from './keys.ts'

/**
 * How long a key's caller is remembered after the database confirmed it. Its last_used_at is
 * written when it is confirmed, so it may lag by this much.
 */
const REMEMBERED_MS = 60_000
const callers = perPool(() => new Remembered<Caller>({ ttlMs: REMEMBERED_MS, max: 10_000 }))

/**
 * The caller an API request claims to be: confirmed by the database for this request, or
 * remembered from an earlier request with the same key, not yet confirmed. A remembered caller
 * is only ever relied on by a statement that checks it still holds (and then `vouched`), or
 * after `confirm`; a revoked key is refused as soon as the revocation is committed.
 */
export class CallerClaim {
  #caller: Caller
  #confirmed: boolean

  constructor(
    private readonly sql: Sql,
    private readonly token: string,
    /** The SHA-256 of the key, for a statement to check the remembered caller against. */
    readonly digest: Buffer,
    caller: Caller,
    confirmed: boolean,
  ) {
    this.#caller = caller
    this.#confirmed = confirmed
  }

  get caller(): Caller {
    return this.#caller
  }

  get confirmed(): boolean {
    return this.#confirmed
  }

  /** A statement found the remembered caller still holds. */
  vouched(): void {
    this.#confirmed = true
  }

  /** The caller as the database says now (unless it already did): INVALID_API_KEY if none. */
  async confirm(): Promise<Caller> {
    if (this.#confirmed) return this.#caller
    this.#caller = await confirmedCaller(this.sql, this.token, this.digest)
    this.#confirmed = true
    return this.#caller
  }
}

/**
 * The claim of a request with `token`: its remembered caller when `remembering` (the request's
 * statements check it), otherwise looked up now.
 */
export async function claimCaller(sql: Sql, token: string, remembering: boolean): Promise<CallerClaim> {
  const digest = sha256(token)
  const remembered = remembering ? callers(sql).get(digest.toString('hex')) : undefined
  if (remembered) return new CallerClaim(sql, token, digest, remembered, false)
  return new CallerClaim(sql, token, digest, await confirmedCaller(sql, token, digest), true)
}

async function confirmedCaller(sql: Sql, token: string, digest: Buffer): Promise<Caller> {
  const caller = await authenticate(sql, token)
  const key = digest.toString('hex')
  if (!caller) {
    callers(sql).forget(key)
    throw new AppError('INVALID_API_KEY')
  }
  callers(sql).set(key, caller)
  return caller
}
