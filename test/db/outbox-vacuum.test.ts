/**
 * The tables the retention purge deletes from are vacuumed once a twentieth of their rows are
 * dead (PostgreSQL's default waits for a fifth), so that what a large purge frees is reused
 * rather than left to grow the table.
 */
import { describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'

const app = useTestApp()

const PURGED = ['outbox', 'outbox_attempts', 'outbox_tags']

describe('vacuum of the purged tables', () => {
  it('every table the purge deletes from is vacuumed once a twentieth of its rows are dead', async () => {
    const rows = await app.services.sql<{ name: string; options: string[] | null }[]>`
      select relname as name, reloptions as options from pg_class
      where relnamespace = 'public'::regnamespace and relkind = 'r' and relname = any(${PURGED})
      order by relname`
    expect(rows.map((r) => r.name)).toEqual([...PURGED].sort())
    for (const row of rows) expect(row.options).toContain('autovacuum_vacuum_scale_factor=0.05')
  })
})
