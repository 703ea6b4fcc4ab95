import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import type { Logger } from '../log.ts'
import { PROJECT_ROOT } from '../project-root.ts'
import { migrateJobSchema } from './jobs.ts'
import type { Db, Sql } from './sql.ts'

const MIGRATIONS_DIR = path.join(PROJECT_ROOT, 'src', 'db', 'migrations')
const FUNCTIONS_DIR = path.join(PROJECT_ROOT, 'src', 'db', 'functions')
// Any constant works; it only has to be the same for every process that migrates.
const MIGRATION_LOCK = 7_405_001
// The files of src/db/functions whose functions use no table nor other function.
const INDEPENDENT = /^10_/

/**
 * graphile-worker's schema, then ours: one of our functions' triggers reaches into
 * graphile-worker's tables. Its schema is needed wherever Mailroom runs, not only where a worker
 * does: the API adds jobs in the same transactions as the mail they send. Answers the names of
 * our migrations applied.
 */
export async function migrateDatabase(sql: Sql, databaseUrl: string, log: Logger): Promise<string[]> {
  await migrateJobSchema(databaseUrl, log)
  return migrate(sql)
}

/**
 * Applies the numbered migrations not yet applied, in order, then every file of
 * src/db/functions, in one transaction under one lock: a process starting meanwhile waits, then
 * finds nothing to do but make the same functions again. The functions that depend on nothing
 * (files numbered 10_) are made before the migrations too: a column's default calls the clock.
 */
async function migrate(sql: Sql): Promise<string[]> {
  const files = await sqlFiles(MIGRATIONS_DIR)
  const applied: string[] = []
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK})`
    await tx`create table if not exists mailroom_migrations (
      name text primary key,
      applied_at timestamptz not null default now()
    )`
    await applyFunctions(tx, INDEPENDENT)
    const done = new Set(
      (await tx<{ name: string }[]>`select name from mailroom_migrations`).map((r) => r.name),
    )
    for (const file of files) {
      if (done.has(file)) continue
      await tx.unsafe(await readFile(path.join(MIGRATIONS_DIR, file), 'utf8'))
      await tx`insert into mailroom_migrations (name) values (${file})`
      applied.push(file)
    }
    await applyFunctions(tx)
  })
  return applied
}

/**
 * The database's functions (and the triggers that call them), made afresh at every start from
 * src/db/functions, in the order of the files' names; migrations hold only the schema. Each file
 * is written to be applied any number of times: `create or replace`, and, where a function's
 * arguments or result change, `drop function if exists` of the old signature first (`create or
 * replace` cannot change them, and a changed argument list would make a second function beside
 * the first). A function no longer wanted at all is dropped by a migration.
 */
async function applyFunctions(tx: Db, only?: RegExp): Promise<void> {
  for (const file of await sqlFiles(FUNCTIONS_DIR)) {
    if (only && !only.test(file)) continue
    await tx.unsafe(await readFile(path.join(FUNCTIONS_DIR, file), 'utf8'))
  }
}

async function sqlFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort()
}
