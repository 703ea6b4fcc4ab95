/**
 * The time the process decides by, in milliseconds since the epoch (as `Date.now()` answers).
 * One per process, `Services.clock`, handed to what ages or expires in memory (the fast path's
 * caches); the database's statements read its twin, mailroom_now().
 */
export type Clock = () => number

/**
 * The wall clock, `offsetMs` ahead: the same offset the service's database sessions give
 * mailroom_now() (only tests set one), so that both clocks agree.
 */
export function clockAhead(offsetMs = 0): Clock {
  return offsetMs ? () => Date.now() + offsetMs : Date.now
}
