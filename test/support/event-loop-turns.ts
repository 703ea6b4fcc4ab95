/**
 * Counts the event loop's turns from now until `stop()`: work that yields between its chunks
 * lets the count rise between them, work that holds the loop does not.
 */
export function countTurns(): { readonly count: number; stop(): void } {
  let count = 0
  let ticking = true
  const tick = () => {
    count++
    if (ticking) setImmediate(tick)
  }
  setImmediate(tick)
  return {
    get count() {
      return count
    },
    stop() {
      ticking = false
    },
  }
}
