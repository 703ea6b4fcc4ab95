/**
 * A worker that found no job just after a notice of new jobs looks once more (src/worker/look-again.ts):
 * the other runner's search may have hidden the job for that moment. Only while the notice is fresh,
 * a few times a notice, and a worker stopped meanwhile is left alone.
 */
import { EventEmitter } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import type { WorkerEvents } from 'graphile-worker'
import { describe, expect, it } from 'vitest'
import { lookAgainAfterHiddenJobs } from '../../src/worker/look-again.ts'

function setUp() {
  const events = new EventEmitter() as WorkerEvents
  lookAgainAfterHiddenJobs(events)
  const nudges: number[] = []
  const worker = { nudge: () => nudges.push(performance.now()) > 0 }
  const notice = () => events.emit('pool:listen:notification', {} as never)
  const foundNone = (w: { nudge(): boolean } = worker) =>
    events.emit('worker:getJob:empty', { worker: w } as never)
  return { nudges, notice, foundNone }
}

describe('a worker that found no job', () => {
  it('just after a notice of new jobs looks again a moment later', async () => {
    const { nudges, notice, foundNone } = setUp()
    notice()
    const emptyAt = performance.now()
    foundNone()
    expect(nudges).toEqual([])
    await sleep(60)
    expect(nudges).toHaveLength(1)
    expect((nudges[0] ?? 0) - emptyAt).toBeGreaterThanOrEqual(5)
  })

  it('looks again three times at most for one notice, and again for the next', async () => {
    const { nudges, notice, foundNone } = setUp()
    notice()
    for (let i = 0; i < 5; i++) foundNone()
    await sleep(40)
    expect(nudges).toHaveLength(3)
    notice()
    foundNone()
    await sleep(40)
    expect(nudges).toHaveLength(4)
  })

  it('with no notice, or long after one, waits for its poll', async () => {
    const { nudges, notice, foundNone } = setUp()
    foundNone()
    notice()
    await sleep(150)
    foundNone()
    await sleep(60)
    expect(nudges).toEqual([])
  })

  it('stopped meanwhile, refuses the nudge without harm', async () => {
    const { notice, foundNone } = setUp()
    let refused = 0
    notice()
    foundNone({
      nudge() {
        refused++
        throw new Error('nudge called after worker terminated')
      },
    })
    await sleep(60)
    expect(refused).toBe(1)
  })
})
