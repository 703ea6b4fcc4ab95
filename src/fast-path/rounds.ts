interface Waiting<T, R> {
  item: T
  resolve(result: R): void
  reject(error: unknown): void
}

/**
 * Statements asked for concurrently, done in rounds: whoever asks while a round is under way
 * waits for the next, which does the work of everyone then waiting in one go (one transaction,
 * one statement). The lanes of a queue run, or concurrent POST /sends through one connection,
 * free up about together (their sends share the connection's SMTP sessions), so a round serves
 * several and the database is asked once for them rather than once each. Nobody waits for a
 * round to fill: with nothing under way, the work starts at once.
 */
export class Rounds<T, R> {
  #waiting: Waiting<T, R>[] = []
  #running = false

  /**
   * `all(items)` does the work of a round: a result for each item, in order. `idle` is called when
   * the last round ends with nobody waiting.
   */
  constructor(
    private readonly all: (items: T[]) => Promise<R[]>,
    private readonly options: RoundOptions<T> & { idle?: () => void } = {},
  ) {}

  do(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject })
      if (!this.#running) void this.#rounds()
    })
  }

  async #rounds(): Promise<void> {
    this.#running = true
    try {
      while (this.#waiting.length > 0) {
        // Lanes freed by the same event (replies read in one go) join the round.
        await new Promise((resolve) => setImmediate(resolve))
        const round = this.#waiting.splice(0, this.#roundLength())
        try {
          const results = await this.all(round.map((w) => w.item))
          for (const [i, w] of round.entries()) w.resolve(results[i] as R)
        } catch (error) {
          for (const w of round) w.reject(error)
        }
      }
    } finally {
      this.#running = false
      this.options.idle?.()
    }
  }

  /** How many of those waiting, oldest first, the next round takes: always at least one. */
  #roundLength(): number {
    const { maxItems = Number.POSITIVE_INFINITY, sizeOf, maxSize = Number.POSITIVE_INFINITY } = this.options
    let size = 0
    let length = 0
    for (const { item } of this.#waiting) {
      size += sizeOf?.(item) ?? 0
      if (length >= maxItems || (length > 0 && size > maxSize)) break
      length++
    }
    return length
  }
}

/**
 * How much one round may take: at most `maxItems`, and no more than `maxSize` of their sizes
 * together (an item larger than that goes alone), so that a round's statement stays as small as
 * its requests' bodies allow.
 */
export interface RoundOptions<T> {
  maxItems?: number
  sizeOf?: (item: T) => number
  maxSize?: number
}

/**
 * Rounds per key (a connection, say): work for one key is done with that key's other work
 * waiting, and never held back by another key's round. A key's rounds are forgotten once idle.
 */
export class KeyedRounds<K, T, R> {
  readonly #rounds = new Map<K, Rounds<T, R>>()

  /** `all(key, items)` does the work of one key's round, as for Rounds, each round within `options`. */
  constructor(
    private readonly all: (key: K, items: T[]) => Promise<R[]>,
    private readonly options: RoundOptions<T> = {},
  ) {}

  do(key: K, item: T): Promise<R> {
    let rounds = this.#rounds.get(key)
    if (!rounds) {
      rounds = new Rounds((items) => this.all(key, items), {
        ...this.options,
        idle: () => this.#rounds.delete(key),
      })
      this.#rounds.set(key, rounds)
    }
    return rounds.do(item)
  }
}
