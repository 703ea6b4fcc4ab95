import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import type { Logger } from '../log.ts'
import { PROJECT_ROOT } from '../project-root.ts'
import { migrateJobSchema } from './jobs.ts'
import type { Sql } from './sql.ts'

const MIGRATIONS_DIR = path.join(PROJECT_ROOT, 'src', 'db', 'migrations')
// Any constant works; it only has to be the same for every process that migrates.
const MIGRATION_LOCK = 7_405_001

/**
 * graphile-worker's schema, then ours: one of ours reaches into graphile-worker's (020). Its
 * schema is needed wherever Mailroom runs, not only where a worker does: the API adds jobs in the
 * same transactions as the mail they send. Answers the names of our migrations applied.
 */
export async function migrateDatabase(sql: Sql, databaseUrl: string, log: Logger): Promise<string[]> {
  await migrateJobSchema(databaseUrl, log)
  return migrate(sql)
}

/** Applies the numbered `.sql` files not yet applied, in order, each in its own transaction. */
async function migrate(sql: Sql): Promise<string[]> {
  const files = (await readdir(MIGRATIONS_DIR)).filter((f) => f.endsWith('.sql')).sort()
  const applied: string[] = []
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK})`
    await tx`create table if not exists mailroom_migrations (
      name text primary key,
      applied_at timestamptz not null default now()
    )`
    const done = new Set(
      (await tx<{ name: string }[]>`select name from mailroom_migrations`).map((r) => r.name),
    )
    for (const file of files) {
      if (done.has(file)) continue
      await tx.unsafe(await readFile(path.join(MIGRATIONS_DIR, file), 'utf8'))
      await tx`insert into mailroom_migrations (name) values (${file})`
      applied.push(file)
    }
  })
  return applied
}
