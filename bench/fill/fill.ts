/**
 * A filled outbox for the scale rows, made once per shape and kept between runs: the bench's
 * service runs on a data dir under BENCH_CACHE_DIR (/var/tmp/mailroom-bench unless said) named
 * by the fill's version and shape, with `fill.json` written beside its PostgreSQL once the fill
 * has ended. A later run finds that file and skips the fill; a fill of another version, an
 * interrupted one, or one older than FRESH_DAYS (its oldest records would soon be past the Pro
 * plan's retention) is made anew.
 */
import { existsSync } from 'node:fs'
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import type { Sql } from '../../src/db/sql.ts'
import { fillRecords, fillSuppressions } from './records.ts'
import { bigBatchSize, FILL_VERSION, type FillShape } from './shape.ts'
import { fillTenants } from './tenants.ts'

/** What the scale rows read: the fill's largest tenant, its 100,000-recipient batch, and what to search. */
export interface FillFacts {
  version: number
  shape: FillShape
  filledAt: string
  fillSeconds: number
  /** The largest tenant (a tenth of the records at 1,000 accounts) and its one big batch. */
  bigAccountId: number
  bigAccountRecords: number
  bigBatchId: number
  bigBatchSize: number
  /** A recipient of the largest tenant that a few of its records have. */
  recipient: string
}

const FRESH_DAYS = 2
const CACHE_ROOT = process.env.BENCH_CACHE_DIR ?? '/var/tmp/mailroom-bench'
/** Tables whose indexes are built after the bulk load rather than maintained through it. */
const LOADED = [
  'outbox',
  'outbox_attempts',
  'outbox_retries',
  'webhook_events',
  'webhook_deliveries',
  'audience_members',
]

/** The data dir of the fill of `shape` (made if missing, open to PostgreSQL's user as root). */
export async function fillDataDir(shape: FillShape): Promise<string> {
  const name = `fill-v${FILL_VERSION}-${shape.records}r-${shape.accounts}a-${shape.connectionsPerAccount}c`
  const dir = path.join(CACHE_ROOT, name)
  const facts = await readFacts(dir)
  const stale = !facts || Date.now() - Date.parse(facts.filledAt) > FRESH_DAYS * 86_400_000
  if (stale && existsSync(dir)) await rm(dir, { recursive: true, force: true })
  await mkdir(dir, { recursive: true })
  await chmod(CACHE_ROOT, 0o755)
  await chmod(dir, 0o755)
  return path.join(dir, 'data')
}

async function readFacts(dir: string): Promise<FillFacts | undefined> {
  const text = await readFile(path.join(dir, 'fill.json'), 'utf8').catch(() => undefined)
  const facts = text ? (JSON.parse(text) as FillFacts) : undefined
  return facts?.version === FILL_VERSION ? facts : undefined
}

/** The fill behind `dataDir`: read when made before, made now (minutes) when not. */
export async function ensureFill(sql: Sql, dataDir: string, shape: FillShape): Promise<FillFacts> {
  const dir = path.dirname(dataDir)
  const made = await readFacts(dir)
  if (made) return made
  const started = performance.now()
  const say = (what: string) =>
    console.log(`fill ${shape.records}: ${what} (${((performance.now() - started) / 1000).toFixed(0)} s)`)
  const indexes = await dropIndexes(sql)
  await fillTenants(sql, shape)
  say('tenants, batches and audiences')
  await fillRecords(sql, shape, (day) => {
    if (day % 10 === 9) say(`day ${day + 1} of ${shape.days}`)
  })
  await fillSuppressions(sql)
  const facts = await factsOf(sql, shape)
  await sql`drop table fill_accounts, fill_batches, fill_audiences`
  say('records, history, webhooks and suppressions')
  for (const definition of indexes) {
    await sql.begin(async (tx) => {
      await tx`set local maintenance_work_mem = '512MB'`
      await tx.unsafe(definition)
    })
  }
  say('indexes')
  // What autovacuum would have done over the 90 days: statistics, and the visibility map that
  // lets index-only scans skip the table.
  await sql.unsafe(
    `vacuum (analyze) ${LOADED.join(', ')}, accounts, connections, batches, batch_contents, suppressions`,
  )
  const result = { ...facts, fillSeconds: Math.round((performance.now() - started) / 1000) }
  say('vacuum and analyze')
  await writeFile(path.join(dir, 'fill.json'), `${JSON.stringify(result, null, 2)}\n`)
  return result
}

/** Drops the loaded tables' indexes that no constraint owns; returns their definitions. */
async function dropIndexes(sql: Sql): Promise<string[]> {
  const rows = await sql<{ name: string; definition: string }[]>`
    select i.indexrelid::regclass::text as name, pg_get_indexdef(i.indexrelid) as definition
    from pg_index i join pg_class t on t.oid = i.indrelid
    where t.relname = any(${LOADED}) and t.relnamespace = 'public'::regnamespace
      and not exists (select 1 from pg_constraint c where c.conindid = i.indexrelid)`
  for (const row of rows) await sql.unsafe(`drop index ${row.name}`)
  return rows.map((r) => r.definition)
}

async function factsOf(sql: Sql, shape: FillShape): Promise<Omit<FillFacts, 'fillSeconds'>> {
  const [big] = await sql<{ account_id: number; batch_id: number }[]>`
    select account_id, batch_id from fill_batches where n = 0`
  if (!big) throw new Error('the fill made no batch')
  const [counted] = await sql<{ n: number }[]>`
    select count(*)::int as n from outbox where account_id = ${big.account_id}`
  const [picked] = await sql<{ address: string }[]>`
    select to_addresses[1] as address from outbox
    where account_id = ${big.account_id} and batch_id is null order by id offset 1000 limit 1`
  return {
    version: FILL_VERSION,
    shape,
    filledAt: new Date().toISOString(),
    bigAccountId: big.account_id,
    bigAccountRecords: counted?.n ?? 0,
    bigBatchId: big.batch_id,
    bigBatchSize: bigBatchSize(shape),
    recipient: picked?.address ?? 'nobody@example.com',
  }
}
