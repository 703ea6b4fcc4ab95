/**
 * A worker's database pools end once quiet (src/worker/quiet-pool.ts): graphile-worker records a
 * job's end without awaiting it, and node-postgres's pool never runs a statement still waiting
 * for a connection when it is told to end. The connection's queue then stayed locked.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { endWhenQuiet } from '../../src/worker/quiet-pool.ts'
import { useTestApp } from '../support/app.ts'

const app = useTestApp()

/** A pool of one connection, held, and a statement waiting for it. */
async function busyPool() {
  const pool = new pg.Pool({ connectionString: app.db.url, max: 1 })
  const held = await pool.connect()
  // A pool told to end leaves this connection open; the test database's removal then ends it,
  // which is expected and must not surface as an uncaught error of the run.
  held.on('error', () => {})
  let outcome = 'waiting'
  const statement = pool.query<{ one: number }>('select 1 as one').then(
    (result) => {
      outcome = `ran: ${result.rows[0]?.one}`
    },
    (error: Error) => {
      outcome = `failed: ${error.message}`
    },
  )
  await sleep(10)
  expect(pool.waitingCount).toBe(1)
  return { pool, held, statement, outcome: () => outcome }
}

describe('ending a worker pool', () => {
  it('runs a statement still waiting for a connection before the pool ends', async () => {
    const { pool, held, statement, outcome } = await busyPool()
    const ended = endWhenQuiet(pool, 5_000)
    await sleep(50)
    held.release()
    await ended
    await statement
    expect(outcome()).toBe('ran: 1')
    expect(pool.totalCount).toBe(0)
  })

  it("is needed: node-postgres's own end leaves such a statement waiting for ever", async () => {
    const { pool, held, outcome } = await busyPool()
    const ended = pool.end()
    await sleep(50)
    held.release()
    await ended
    await sleep(50)
    expect(outcome()).toBe('waiting')
  })

  it('ends an idle pool at once', async () => {
    const pool = new pg.Pool({ connectionString: app.db.url, max: 2 })
    await pool.query('select 1')
    await endWhenQuiet(pool, 60_000)
    expect(pool.ended).toBe(true)
  })
})
