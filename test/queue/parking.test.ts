/**
 * The parked lanes of a queue run (src/queue/parking.ts): a lane with nothing due waits for the
 * next lane to ask for mail, the run ends when every lane is parked, and a stop releases them all,
 * those that park after it too (a worker's stop waits for its runs to end).
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { Parking } from '../../src/queue/parking.ts'

const STILL_PARKED = 'still parked' as const

/** What `park` answers within a moment, or that it still waits. */
function settled(parked: Promise<boolean>): Promise<boolean | typeof STILL_PARKED> {
  return Promise.race([parked, sleep(200).then(() => STILL_PARKED)])
}

describe('parked lanes', () => {
  it('wait until another lane asks for mail, and then ask with it', async () => {
    const parking = new Parking(2, new AbortController().signal)
    const parked = parking.park()
    expect(await settled(parked)).toBe(STILL_PARKED)
    parking.wake()
    expect(await settled(parked)).toBe(true)
  })

  it('end together when the last lane parks', async () => {
    const parking = new Parking(3, new AbortController().signal)
    const first = parking.park()
    const second = parking.park()
    expect(await settled(first)).toBe(STILL_PARKED)
    expect(await parking.park()).toBe(false)
    expect([await settled(first), await settled(second)]).toEqual([false, false])
  })

  it('a woken lane counts again: the run goes on until all are parked at once', async () => {
    const parking = new Parking(2, new AbortController().signal)
    const first = parking.park()
    parking.wake()
    expect(await first).toBe(true)
    const again = parking.park()
    expect(await settled(again)).toBe(STILL_PARKED)
    expect(await parking.park()).toBe(false)
    expect(await settled(again)).toBe(false)
  })

  it('are released by a stop, and a lane that parks after the stop ends at once', async () => {
    const stop = new AbortController()
    const parking = new Parking(3, stop.signal)
    const before = parking.park()
    stop.abort()
    expect(await settled(before)).toBe(false)
    // The third lane left on the stop without parking: nobody would release this one.
    expect(await settled(parking.park())).toBe(false)
  })
})
