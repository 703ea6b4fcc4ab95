interface Waiting<T, R> {
  item: T
  resolve(result: R): void
  reject(error: unknown): void
}

/**
 * Work the lanes of one queue run ask for, done in rounds: a lane that asks while a round is
 * under way waits for the next, which does the work of every lane then waiting in one go (one
 * transaction, one statement). Lanes free up about together (their sends share a connection), so
 * a round serves several and the database is asked once for them rather than once each.
 */
export class Rounds<T, R> {
  #waiting: Waiting<T, R>[] = []
  #running = false

  /** `all(items)` does the work of a round: a result for each item, in order. */
  constructor(private readonly all: (items: T[]) => Promise<R[]>) {}

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
        const round = this.#waiting.splice(0)
        try {
          const results = await this.all(round.map((w) => w.item))
          for (const [i, w] of round.entries()) w.resolve(results[i] as R)
        } catch (error) {
          for (const w of round) w.reject(error)
        }
      }
    } finally {
      this.#running = false
    }
  }
}
