import { readdir } from 'node:fs/promises'
import { afterAll, describe, expect, inject, it } from 'vitest'
import { connect } from '../../src/db/sql.ts'
import { createTestDatabase, type TestDatabase } from './database.ts'

describe('createTestDatabase', () => {
  const made: TestDatabase[] = []
  afterAll(async () => {
    await Promise.all(made.map((db) => db.drop()))
  })

  it('applies every migration', async () => {
    const db = await createTestDatabase()
    made.push(db)
    const files = (await readdir(new URL('../../src/db/migrations/', import.meta.url))).filter((f) =>
      f.endsWith('.sql'),
    )
    const applied = await db.sql<{ name: string }[]>`select name from mailroom_migrations order by name`
    expect(applied.map((r) => r.name)).toEqual(files.sort())
    const [tables] = await db.sql<{ count: number }[]>`
      select count(*)::int as count from information_schema.tables
      where table_schema = 'public' and table_name in ('accounts', 'connections')`
    expect(tables?.count).toBe(2)
  })

  it('gives each caller a database of its own', async () => {
    const [a, b] = await Promise.all([createTestDatabase(), createTestDatabase()])
    if (!a || !b) throw new Error('unreachable')
    made.push(a, b)
    expect(a.url).not.toBe(b.url)
    await a.sql`insert into accounts (email) values ('only-in-a@example.com')`
    const inA = await a.sql`select email from accounts`
    const inB = await b.sql`select email from accounts`
    expect(inA.map((r) => r.email)).toEqual(['only-in-a@example.com'])
    expect(inB).toHaveLength(0)
  })

  it('can be reached through its URL by code that opens its own pool, and is gone after drop()', async () => {
    const db = await createTestDatabase()
    const other = connect(db.url, 1)
    const [row] = await other<{ name: string }[]>`select current_database() as name`
    await other.end()
    expect(db.url).toContain(`/${row?.name}`)
    await db.drop()
    await db.drop() // idempotent
    const admin = connect(inject('database').serverUrl, 1)
    const left = await admin`select 1 from pg_database where datname = ${row?.name ?? ''}`
    await admin.end()
    expect(left).toHaveLength(0)
  })

  it('leaves the template untouched', async () => {
    const db = await createTestDatabase()
    made.push(db)
    await db.sql`insert into accounts (email) values ('not-in-template@example.com')`
    const again = await createTestDatabase()
    made.push(again)
    expect(await again.sql`select * from accounts`).toHaveLength(0)
  })
})
