import type { ClaimedQueued, QueuedClaim } from './send-queued.ts'

/** What a lane gets: one message of its own, or why there is none. */
export type LaneTurn = Exclude<QueuedClaim, { kind: 'claimed' }> | { kind: 'message'; claimed: ClaimedQueued }

interface Waiting {
  resolve(turn: LaneTurn): void
  reject(error: unknown): void
}

/**
 * Claims for the lanes of one queue run in rounds: a lane that asks while a round is under way
 * waits for the next, which claims one message for every lane then waiting, in one transaction.
 * Lanes free up about together (their sends share a connection), so a round serves several and
 * the database is asked once for them rather than once each. No message is claimed for a lane
 * not waiting for it: a run that stops leaves none claimed and unsent.
 */
export class ClaimRounds {
  #waiting: Waiting[] = []
  #running = false

  /** `claim(n)` claims up to n messages. */
  constructor(private readonly claim: (wanted: number) => Promise<QueuedClaim>) {}

  next(): Promise<LaneTurn> {
    return new Promise<LaneTurn>((resolve, reject) => {
      this.#waiting.push({ resolve, reject })
      if (!this.#running) void this.#rounds()
    })
  }

  async #rounds(): Promise<void> {
    this.#running = true
    try {
      while (this.#waiting.length > 0) {
        // Lanes freed by the same event (replies read in one go) join the round.
        await new Promise((resolve) => setImmediate(resolve))
        const lanes = this.#waiting.splice(0)
        try {
          const claim = await this.claim(lanes.length)
          lanes.forEach((lane, i) => {
            const claimed = claim.kind === 'claimed' ? claim.claimed[i] : undefined
            if (claimed) lane.resolve({ kind: 'message', claimed })
            else lane.resolve(claim.kind === 'claimed' ? { kind: 'idle' } : claim)
          })
        } catch (error) {
          for (const lane of lanes) lane.reject(error)
        }
      }
    } finally {
      this.#running = false
    }
  }
}
