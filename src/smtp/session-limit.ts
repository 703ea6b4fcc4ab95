/** Messages carried at a lowered session count before one more session is tried. */
const RAISE_AFTER_MESSAGES = 50

/**
 * How many SMTP sessions one connection may hold open at once. A server that limits the sessions
 * of one client (Postfix's per-client connection limit) greets one more with `421 4.7.0 too many
 * connections`; while the connection's other sessions work, that means "fewer sessions", not
 * "slow down": the count drops to the sessions the server let in, and the message waits for one
 * of them. It climbs back one session at a time, each after RAISE_AFTER_MESSAGES messages carried
 * at the lower count: a server whose limit was lifted gets its sessions back, and one that still
 * limits sees a refused greeting now and then, not one a message.
 */
export class SessionLimit {
  #current: number
  #carried = 0

  /** `most`: the count the connection starts at and never goes above. */
  constructor(readonly most: number) {
    this.#current = most
  }

  get current(): number {
    return this.#current
  }

  /** A new session was refused at connect while `others` of the connection's sessions remain. */
  refused(others: number): void {
    this.#current = Math.max(1, Math.min(this.#current, others))
    this.#carried = 0
  }

  /** A message went through one of the sessions. */
  carried(): void {
    if (this.#current >= this.most) return
    this.#carried++
    if (this.#carried < RAISE_AFTER_MESSAGES) return
    this.#current++
    this.#carried = 0
  }
}
