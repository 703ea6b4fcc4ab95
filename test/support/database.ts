import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { inject } from 'vitest'
import { connect, type Sql } from '../../src/db/sql.ts'

export interface TestDatabase {
  /** Connection string of this database alone, for code under test that opens its own pool. */
  url: string
  sql: Sql
  /** Closes `sql` and drops the database, forcibly ending any connection still open to it. */
  drop(): Promise<void>
}

let admin: Sql | undefined
let live = 0

// Shared by the databases of one worker and ended with the last of them, so that nothing keeps
// a connection open once a test file has dropped what it made.
function adminSql(): Sql {
  admin ??= connect(inject('database').serverUrl, 2)
  return admin
}

async function release(): Promise<void> {
  live--
  if (live === 0 && admin) {
    const ending = admin
    admin = undefined
    await ending.end({ timeout: 5 })
  }
}

/** A fresh, migrated database of its own: a copy of the run's template, made in milliseconds. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const { serverUrl, template } = inject('database')
  const name = `mailroom_test_${process.pid}_${randomBytes(5).toString('hex')}`
  const sql = adminSql()
  live++
  for (let attempt = 1; ; attempt++) {
    try {
      await sql.unsafe(`create database ${name} template ${template}`)
      break
    } catch (error) {
      // The template is busy while another copy is taken or someone is connected to it.
      const busy = /being accessed by other users/.test(String((error as Error).message))
      if (!busy || attempt >= 50) {
        await release()
        throw error
      }
      await sleep(50 + Math.random() * 100)
    }
  }
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  const client = connect(url.toString())
  let dropped = false
  return {
    url: url.toString(),
    sql: client,
    async drop() {
      if (dropped) return
      dropped = true
      await client.end({ timeout: 5 })
      try {
        await untilDisconnected(sql, name)
        await sql.unsafe(`drop database if exists ${name} with (force)`)
      } finally {
        await release()
      }
    },
  }
}

/**
 * Waits, two seconds at most, for the last connections to `name` to go. A pool a test (or
 * graphile-worker) told to end may still be closing its connections; a forced drop would end
 * them first, and node-postgres reports that on a client no one listens to any more, as an
 * uncaught error of the run.
 */
async function untilDisconnected(sql: Sql, name: string): Promise<void> {
  const giveUpAt = Date.now() + 2_000
  while (Date.now() < giveUpAt) {
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity where datname = ${name}`
    if (row?.n === 0) return
    await sleep(20)
  }
}
