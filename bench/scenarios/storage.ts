import type { Sql } from '../../src/db/sql.ts'
import type { Bench, Scenario } from '../support.ts'

/**
 * Bytes on disk: per email (its record, its attempts, its history), per batch recipient (its
 * record, and its place in the batch's store while it waits), per audience member; the largest
 * tables and indexes; and how often each outbox index was used since the big outbox's reads
 * began (noteIndexScans), the figure that says which indexes earn their keep.
 */

let scansNoted: Map<string, number> | undefined

async function indexScans(sql: Sql): Promise<Map<string, number>> {
  const rows = await sql<{ name: string; scans: number }[]>`
    select indexrelname as name, idx_scan::float8 as scans from pg_stat_user_indexes`
  return new Map(rows.map((r) => [r.name, r.scans]))
}

/** Remembers every index's scans so far; storage reports those made since. */
export async function noteIndexScans(sql: Sql): Promise<void> {
  scansNoted = await indexScans(sql)
}

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`

interface Relation {
  name: string
  rows: number
  total: number
  heap: number
  toast: number
  indexes: number
}

async function relations(sql: Sql): Promise<Map<string, Relation>> {
  const rows = await sql<Relation[]>`
    select c.relname as name, greatest(c.reltuples, 0)::float8 as rows, pg_total_relation_size(c.oid)::float8 as total,
      pg_relation_size(c.oid)::float8 as heap, coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0)::float8 as toast,
      pg_indexes_size(c.oid)::float8 as indexes
    from pg_class c where c.relkind = 'r' and c.relnamespace = 'public'::regnamespace`
  return new Map(rows.map((r) => [r.name, r]))
}

async function perEmail(sql: Sql, tables: Map<string, Relation>): Promise<string[]> {
  const outbox = tables.get('outbox')
  const [counted] = await sql<{ records: number; batch: number }[]>`
    select count(*)::float8 as records, count(*) filter (where batch_id is not null)::float8 as batch from outbox`
  if (!outbox || !counted?.records) return ['(no outbox records)']
  const per = (name: string) => {
    const t = tables.get(name)
    return t ? (t.total / counted.records).toFixed(0) : '0'
  }
  // A row's own bytes, by kind: a batch recipient's has no subject or bodies of its own.
  const [sampled] = await sql<{ transactional: number; recipient: number }[]>`
    select avg(pg_column_size(o.*)) filter (where batch_id is null)::float8 as transactional,
      avg(pg_column_size(o.*)) filter (where batch_id is not null)::float8 as recipient
    from outbox o tablesample system (1)`
  const [stored] = await sql<{ bytes: number }[]>`
    select avg(pg_column_size(jsonb_build_array(email, payload, id)))::float8 as bytes
    from audience_members tablesample system (5)`
  const members = tables.get('audience_members')
  return [
    `${counted.records.toFixed(0)} records (${counted.batch.toFixed(0)} of batch recipients): per email ` +
      `${((outbox.heap + outbox.toast) / counted.records).toFixed(0)} B record + ${(outbox.indexes / counted.records).toFixed(0)} B ` +
      `its indexes, ${per('outbox_attempts')} B attempts, ${per('outbox_retries')} B retries by hand, ` +
      `${per('webhook_events')} + ${per('webhook_deliveries')} B webhook events and deliveries`,
    `row alone: transactional ${sampled?.transactional?.toFixed(0) ?? '-'} B, batch recipient ${sampled?.recipient?.toFixed(0) ?? '-'} B; ` +
      `a waiting batch recipient in its batch's store about ${stored?.bytes?.toFixed(0) ?? '-'} B`,
    `per audience member: ${members && members.rows > 0 ? (members.total / members.rows).toFixed(0) : '-'} B (row and its two indexes)`,
  ]
}

async function largest(sql: Sql, tables: Map<string, Relation>): Promise<string[]> {
  const top = [...tables.values()].sort((a, b) => b.total - a.total).slice(0, 8)
  const indexes = await sql<{ name: string; bytes: number }[]>`
    select indexrelname as name, pg_relation_size(indexrelid)::float8 as bytes
    from pg_stat_user_indexes order by 2 desc limit 12`
  const database = await sql<
    { bytes: number }[]
  >`select pg_database_size(current_database())::float8 as bytes`
  return [
    `database ${mb(database[0]?.bytes ?? 0)}; largest tables (total = heap + toast + indexes):`,
    ...top.map(
      (t) =>
        `  ${t.name}: ${mb(t.total)} = ${mb(t.heap)} + ${mb(t.toast)} + ${mb(t.indexes)}, ~${t.rows.toFixed(0)} rows`,
    ),
    'largest indexes:',
    ...indexes.map((i) => `  ${i.name}: ${mb(i.bytes)}`),
  ]
}

async function usage(sql: Sql): Promise<string[]> {
  const now = await indexScans(sql)
  const rows = await sql<{ name: string; bytes: number }[]>`
    select indexrelname as name, pg_relation_size(indexrelid)::float8 as bytes
    from pg_stat_user_indexes where relname like 'outbox%' order by relname, indexrelname`
  const since = scansNoted ? 'since the reads began' : 'since the service started'
  return [
    `outbox index scans ${since}:`,
    ...rows.map(
      (r) => `  ${r.name} (${mb(r.bytes)}): ${(now.get(r.name) ?? 0) - (scansNoted?.get(r.name) ?? 0)}`,
    ),
  ]
}

export const storage: Scenario = {
  name: 'storage',
  onlyWhenNamed: true,
  async run(bench: Bench) {
    const sql = bench.services.sql
    const started = performance.now()
    const tables = await relations(sql)
    const lines = [...(await perEmail(sql, tables)), ...(await largest(sql, tables)), ...(await usage(sql))]
    const seconds = (performance.now() - started) / 1000
    return [
      {
        name: 'storage (below)',
        count: 1,
        seconds,
        latencies: [],
        paced: true,
        note: `\n${lines.join('\n')}`,
      },
    ]
  },
}
