import { setTimeout as sleep } from 'node:timers/promises'
import type pg from 'pg'

const LOOK_EVERY_MS = 5

/**
 * Ends `pool` once no statement is under way on it or waiting for one of its connections, or
 * after `patienceMs` at the latest. graphile-worker 0.17 records the end of a job (which unlocks
 * its named queue) without awaiting it, and a pool ended while that statement waits for a
 * connection drops it: the job and its queue then stayed locked until the lock looked abandoned.
 */
export async function endWhenQuiet(pool: pg.Pool, patienceMs: number): Promise<void> {
  const giveUpAt = performance.now() + patienceMs
  while ((pool.waitingCount > 0 || pool.idleCount < pool.totalCount) && performance.now() < giveUpAt) {
    await sleep(LOOK_EVERY_MS)
  }
  await pool.end()
}
