import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { DAY, later, MINUTE } from '../support/clock.ts'

const DB = path.resolve(import.meta.dirname, '../../src/db')
/** graphile-worker compares its tables' times with now() in its own statements; ours do too there. */
const ON_GRAPHILE_WORKERS_CLOCK = ['jobs.ts', 'graphile-internals.ts']
// The database's clock read directly, not through mailroom_now() or mailroom_clock().
const DIRECT = /(?<![\w.])(?:now\(\)|current_timestamp|current_date|localtimestamp|statement_timestamp\(\))/i

const app = useTestApp()

describe('one clock in the database: mailroom_now()', () => {
  it('no statement on Mailroom’s tables reads the database’s clock directly', async () => {
    const files = (await readdir(DB)).filter(
      (f) => f.endsWith('.ts') && f !== 'migrate.ts' && !ON_GRAPHILE_WORKERS_CLOCK.includes(f),
    )
    const functions = (await readdir(path.join(DB, 'functions')))
      .filter((f) => f.endsWith('.sql') && !f.endsWith('_mailroom_clock.sql'))
      .map((f) => `functions/${f}`)
    const offenders: string[] = []
    for (const file of [...files, ...functions]) {
      const text = (await readFile(path.join(DB, file), 'utf8')).replace(/--.*$/gm, '')
      text.split('\n').forEach((line, index) => {
        if (DIRECT.test(line)) offenders.push(`src/db/${file}:${index + 1}: ${line.trim()}`)
      })
    }
    expect(offenders).toEqual([])
  })

  it('every time a row of Mailroom’s records by default is on mailroom_now()', async () => {
    const columns = await app.services.sql<{ column: string }[]>`
      select table_name || '.' || column_name as column from information_schema.columns
      where table_schema = 'public' and table_name <> 'mailroom_migrations'
        and column_default ~* '(^|[^_a-z])now\\(\\)'
      order by 1`
    expect(columns.map((c) => c.column)).toEqual([])
  })

  it('the process’s clock runs as far ahead as the database’s', async () => {
    const { services } = await later(app, DAY)
    const [row] = await services.sql<{ ms: number }[]>`
      select extract(epoch from mailroom_now())::float8 * 1000 as ms`
    expect(Math.abs(services.clock() - (row?.ms ?? 0))).toBeLessThan(MINUTE)
    expect(services.clock() - Date.now()).toBeGreaterThan(DAY - MINUTE)
  })
})
