import { AppError } from '../app-error.ts'
import type { Clock } from '../clock.ts'
import { type KeyOwner, usableKeysByHash } from '../db/api-keys.ts'
import type { Sql } from '../db/sql.ts'
import type { Caller } from '../keys/caller.ts'
import { authenticate, sha256 } from '../keys/keys.ts'
import { ExpiringCache } from './expiring-cache.ts'
import { Rounds } from './rounds.ts'

/**
 * How long a key's caller stays cached after the database checked it. Its last_used_at is
 * written when it is checked, so it may lag by this much.
 */
const CACHED_MS = 60_000

/**
 * The API's callers by key: looked up in rounds, one statement for the keys of the requests
 * arriving together, and cached for CACHED_MS after the database checked them. One per
 * process, built by openServices.
 */
export class CallerCache {
  readonly #callers: ExpiringCache<Caller>
  readonly #lookups: Rounds<Buffer, KeyOwner | undefined>

  constructor(
    private readonly sql: Sql,
    clock: Clock,
  ) {
    this.#callers = new ExpiringCache<Caller>({ ttlMs: CACHED_MS, max: 10_000 }, clock)
    this.#lookups = new Rounds((digests: Buffer[]) => usableKeysByHash(sql, digests), { maxItems: 256 })
  }

  /**
   * The caller of a request with `token`: its cached caller, unchecked, when `useCache` (the
   * request's statements recheck it), otherwise checked now.
   */
  async callerOf(token: string, useCache: boolean): Promise<RequestCaller> {
    const digest = sha256(token)
    const cached = useCache ? this.#callers.get(digest.toString('hex')) : undefined
    if (cached) return new RequestCaller(this, token, digest, cached, false)
    return new RequestCaller(this, token, digest, await this.checked(token, digest), true)
  }

  /** The caller `token` speaks for (see authenticate), looked up in a round with others. */
  lookUp(token: string): Promise<Caller | undefined> {
    return authenticate(this.sql, token, (digest) => this.#lookups.do(digest))
  }

  /** The caller as the database says now, cached for later requests: INVALID_API_KEY if none. */
  async checked(token: string, digest: Buffer): Promise<Caller> {
    const caller = await this.lookUp(token)
    const key = digest.toString('hex')
    if (!caller) {
      this.#callers.forget(key)
      throw new AppError('INVALID_API_KEY')
    }
    this.#callers.set(key, caller)
    return caller
  }
}

/**
 * The caller of an API request: checked by the database for this request, or taken from the
 * caller cache, not yet checked. A cached caller is only ever relied on by a statement that
 * rechecks it (and then `recheckPassed`), or after `check`; a revoked key is refused as soon
 * as the revocation is committed.
 */
export class RequestCaller {
  #caller: Caller
  #checked: boolean

  constructor(
    private readonly cache: CallerCache,
    private readonly token: string,
    /** The SHA-256 of the key, for a statement to recheck the cached caller against. */
    readonly digest: Buffer,
    caller: Caller,
    checked: boolean,
  ) {
    this.#caller = caller
    this.#checked = checked
  }

  get caller(): Caller {
    return this.#caller
  }

  /** The database said the caller holds, for this request. */
  get checked(): boolean {
    return this.#checked
  }

  /** A statement rechecked the cached caller and found it still holds. */
  recheckPassed(): void {
    this.#checked = true
  }

  /** The caller as the database says now (unless it already did): INVALID_API_KEY if none. */
  async check(): Promise<Caller> {
    if (this.#checked) return this.#caller
    this.#caller = await this.cache.checked(this.token, this.digest)
    this.#checked = true
    return this.#caller
  }
}
