/**
 * When a batch's expansion looks at its queue again (nextLookMs): once the queue will have
 * drained to room for a whole step (a chunk, or `ahead` if smaller), at the pace it drained since
 * the last look; no sooner than recheckMs, no later than maxRecheckMs.
 */
import { describe, expect, it } from 'vitest'
import { DEFAULT_EXPANSION, type ExpansionPolicy, nextLookMs } from '../../src/batches/expansion.ts'

const policy: ExpansionPolicy = { chunk: 1_000, ahead: 5_000, recheckMs: 250, maxRecheckMs: 30_000 }

describe('nextLookMs', () => {
  it('looks again after recheckMs the first time the queue is full', () => {
    expect(nextLookMs(policy, { batchId: 1 }, 5_000, 5_000)).toBe(250)
  })

  it('waits until a chunk has drained, at the pace seen: 1000 above the 4000 a whole step needs, draining 500 per 250 ms', () => {
    // Seen 5000 queued at the last look, 4500 at this one, 250 ms apart.
    expect(nextLookMs(policy, { batchId: 1, seen: 5_000, waitedMs: 250 }, 4_500, 5_000)).toBe(500)
  })

  it('with `ahead` below the chunk, waits for the queue to drain to zero, not past it', () => {
    const small = { ...policy, chunk: 1_000, ahead: 500 }
    // 100 drained in 1000 ms; 500 queued: room for a step of 500 in 5000 ms (not 10,000).
    expect(nextLookMs(small, { batchId: 1, seen: 600, waitedMs: 1_000 }, 500, 500)).toBe(5_000)
  })

  it('doubles its wait while the queue does not drain (a paused connection), up to maxRecheckMs', () => {
    expect(nextLookMs(policy, { batchId: 1, seen: 5_000, waitedMs: 4_000 }, 5_000, 5_000)).toBe(8_000)
    expect(nextLookMs(policy, { batchId: 1, seen: 5_000, waitedMs: 20_000 }, 5_000, 5_000)).toBe(30_000)
  })

  it('never looks sooner than recheckMs, nor later than maxRecheckMs', () => {
    // Drained fast: room in 2 ms by the pace, but not before 250.
    expect(nextLookMs(policy, { batchId: 1, seen: 5_000, waitedMs: 250 }, 4_100, 4_100 + 1)).toBe(250)
    // Drained 1 in 250 ms: room in 250,000 ms by the pace, but not after 30,000.
    expect(nextLookMs(DEFAULT_EXPANSION, { batchId: 1, seen: 5_000, waitedMs: 250 }, 4_999, 5_000)).toBe(
      30_000,
    )
  })
})
