/**
 * Which account each row of the database belongs to, found from the schema itself: every table
 * of the `public` schema is followed along its foreign keys to `accounts`, so a table added by a
 * later migration is covered without being named here. The isolation walk uses it to snapshot
 * one account's rows and to find rows of one account that point at another's.
 */
import type { Sql } from '../../src/db/sql.ts'

interface ForeignKey {
  table: string
  column: string
  ref: string
  refColumn: string
}

export interface Ownership {
  /** Tables whose rows lead to an account, with the query that gives each row and its owner. */
  owned: Map<string, string>
  /** Tables that lead to no account (throttling counters, worker heartbeats). */
  unowned: string[]
  foreignKeys: ForeignKey[]
}

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`

/** Reads the schema: tables, single-column foreign keys, and a shortest path from each table to `accounts`. */
export async function ownershipOf(sql: Sql): Promise<Ownership> {
  const tables = (
    await sql<{ name: string }[]>`
      select table_name as name from information_schema.tables
      where table_schema = 'public' and table_type = 'BASE TABLE' order by table_name`
  ).map((t) => t.name)
  const foreignKeys = await sql<ForeignKey[]>`
    select c.conrelid::regclass::text as table, a.attname as column,
           c.confrelid::regclass::text as ref, fa.attname as "refColumn"
    from pg_constraint c
    join pg_attribute a on a.attrelid = c.conrelid and a.attnum = c.conkey[1]
    join pg_attribute fa on fa.attrelid = c.confrelid and fa.attnum = c.confkey[1]
    where c.contype = 'f' and c.connamespace = 'public'::regnamespace
      and cardinality(c.conkey) = 1
    order by 1, 2`
  const owned = new Map<string, string>()
  const unowned: string[] = []
  for (const table of tables) {
    const path = pathToAccounts(table, foreignKeys)
    if (!path) {
      unowned.push(table)
      continue
    }
    // t0 is the table itself; each step joins the row its foreign key points at.
    const joins = path
      .slice(0, -1)
      .map(
        (fk, i) =>
          `left join ${quote(fk.ref)} t${i + 1} on t${i + 1}.${quote(fk.refColumn)} = t${i}.${quote(fk.column)}`,
      )
    const last = path.at(-1)
    const owner = last ? `t${path.length - 1}.${quote(last.column)}` : 't0.id'
    owned.set(
      table,
      `select to_jsonb(t0) as row, ${owner} as owner from ${quote(table)} t0 ${joins.join(' ')}`,
    )
  }
  return { owned, unowned, foreignKeys }
}

/** The shortest chain of foreign keys from `table` to `accounts` ([] for `accounts` itself). */
function pathToAccounts(table: string, foreignKeys: ForeignKey[]): ForeignKey[] | undefined {
  const queue: { table: string; path: ForeignKey[] }[] = [{ table, path: [] }]
  const seen = new Set([table])
  while (queue.length) {
    const next = queue.shift()
    if (!next) break
    if (next.table === 'accounts') return next.path
    for (const fk of foreignKeys.filter((k) => k.table === next.table && !seen.has(k.ref))) {
      seen.add(fk.ref)
      queue.push({ table: fk.ref, path: [...next.path, fk] })
    }
  }
  return undefined
}

/** Every row of every owned table that belongs to `accountId`, as sorted JSON text per table. */
export async function rowsOf(
  sql: Sql,
  ownership: Ownership,
  accountId: number,
): Promise<Record<string, string[]>> {
  const snapshot: Record<string, string[]> = {}
  for (const [table, query] of ownership.owned) {
    const rows = await sql.unsafe<{ row: unknown }[]>(`select row from (${query}) x where owner = $1`, [
      accountId,
    ])
    snapshot[table] = rows.map((r) => JSON.stringify(r.row)).sort()
  }
  return snapshot
}

/**
 * Rows of `from` that point (by any foreign key) at a row of `to`: e.g. a key of one account
 * scoped to another's connection. Each as `table.column -> ref: row`.
 */
export async function crossLinks(
  sql: Sql,
  ownership: Ownership,
  from: number,
  to: number,
): Promise<string[]> {
  const found: string[] = []
  for (const fk of ownership.foreignKeys) {
    const source = ownership.owned.get(fk.table)
    const target = ownership.owned.get(fk.ref)
    if (!source || !target) continue
    const rows = await sql.unsafe<{ row: unknown }[]>(
      `select s.row from (${source}) s
       where s.owner = $1 and s.row->>'${fk.column}' in (
         select t.row->>'${fk.refColumn}' from (${target}) t where t.owner = $2)`,
      [from, to],
    )
    for (const r of rows) found.push(`${fk.table}.${fk.column} -> ${fk.ref}: ${JSON.stringify(r.row)}`)
  }
  return found
}
