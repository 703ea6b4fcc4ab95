import type { Clock } from '../clock.ts'

/**
 * What this process read from the database lately, kept for `ttlMs`, for a later request's
 * statement to recheck (never trusted alone: the database has the last word). Bounded: when
 * full, the entry kept longest is dropped first.
 */
export class ExpiringCache<V> {
  readonly #entries = new Map<string, { value: V; until: number }>()

  constructor(
    private readonly options: { ttlMs: number; max: number },
    private readonly now: Clock,
  ) {}

  get(key: string): V | undefined {
    const entry = this.#entries.get(key)
    if (entry === undefined) return undefined
    if (entry.until > this.now()) return entry.value
    this.#entries.delete(key)
    return undefined
  }

  set(key: string, value: V): void {
    this.#entries.delete(key)
    if (this.#entries.size >= this.options.max) {
      const oldest = this.#entries.keys().next()
      if (!oldest.done) this.#entries.delete(oldest.value)
    }
    this.#entries.set(key, { value, until: this.now() + this.options.ttlMs })
  }

  forget(key: string): void {
    this.#entries.delete(key)
  }
}
