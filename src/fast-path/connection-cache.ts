import type { Clock } from '../clock.ts'
import type { ConnectionRef, SendingConnection } from '../db/connections.ts'
import { ExpiringCache } from './expiring-cache.ts'

/**
 * The connections POST /sends and /enqueues lately read, by how they named them, for a later
 * request's statement to recheck (see Recheck, src/db/fast-path.ts). One per process, built by
 * openServices.
 */
export class ConnectionCache {
  readonly #connections: ExpiringCache<SendingConnection>

  constructor(clock: Clock) {
    this.#connections = new ExpiringCache<SendingConnection>({ ttlMs: 60_000, max: 10_000 }, clock)
  }

  get(ref: ConnectionRef): SendingConnection | undefined {
    return this.#connections.get(keyOf(ref))
  }

  /** Caches what `ref` named when read, or drops it when it named nothing. */
  set(ref: ConnectionRef, connection: SendingConnection | undefined): void {
    if (connection) this.#connections.set(keyOf(ref), connection)
    else this.#connections.forget(keyOf(ref))
  }
}

/** `from` is case-insensitive: any spelling of an address names the same connection. */
function keyOf(ref: ConnectionRef): string {
  return JSON.stringify('address' in ref ? { ...ref, address: ref.address.toLowerCase() } : ref)
}
