/**
 * The lanes of one queue run that found nothing due, waiting for the others rather than ending:
 * mail queued while the run is under way is the run's to send (a request that finds the run
 * started asks for the next one, which waits for this one to end), and a lane that ended would
 * leave the run with fewer messages in flight than its sessions can take. A parked lane asks
 * again with the next lane that asks for mail; the run ends when every lane is parked at once.
 */
export class Parking {
  #active: number
  #parked: ((goOn: boolean) => void)[] = []
  readonly #stop: AbortSignal

  constructor(lanes: number, stop: AbortSignal) {
    this.#active = lanes
    this.#stop = stop
    stop.addEventListener('abort', () => this.#release(false), { once: true })
  }

  /**
   * Waits until another lane asks for mail (true: ask with it), or until every lane is parked
   * or the run stops (false: end).
   */
  park(): Promise<boolean> {
    // Once stopped, lanes end without parking: none would come to release this one.
    if (this.#stop.aborted) return Promise.resolve(false)
    this.#active--
    if (this.#active === 0) {
      this.#release(false)
      return Promise.resolve(false)
    }
    return new Promise((resolve) => this.#parked.push(resolve))
  }

  /** A lane is about to ask for mail: the parked ones ask in the same round. */
  wake(): void {
    this.#active += this.#parked.length
    this.#release(true)
  }

  #release(goOn: boolean): void {
    const parked = this.#parked
    this.#parked = []
    for (const resolve of parked) resolve(goOn)
  }
}
