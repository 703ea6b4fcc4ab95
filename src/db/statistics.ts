import type { Db } from './sql.ts'

/**
 * The fewest rows changed since a table's last ANALYZE that make it worth another here: below
 * this, a plan made for the table as it was costs next to nothing whatever it chose.
 */
export const ANALYZE_AFTER_ROWS = 500

/**
 * Analyzes the service's tables that changed by at least as many rows as they held at their last
 * ANALYZE (and at least ANALYZE_AFTER_ROWS): on a new installation, PostgreSQL keeps the plans it
 * made while the tables were empty (sequential scans) until statistics change, and autovacuum
 * looks only once a minute; this keeps a young table's statistics within a factor of two of its
 * size, at a handful of ANALYZEs while it grows, and leaves grown tables to autovacuum, whose
 * tenth of a table comes sooner. A table another process is analyzing is skipped. Answers the
 * tables analyzed.
 */
export async function analyzeGrownTables(db: Db): Promise<string[]> {
  const grown = await db<{ name: string }[]>`
    select s.relname as name from pg_stat_user_tables s join pg_class c on c.oid = s.relid
    where s.schemaname = 'public'
      and s.n_mod_since_analyze >= greatest(${ANALYZE_AFTER_ROWS}::int, c.reltuples)`
  for (const { name } of grown) await db`analyze (skip_locked) ${db(name)}`
  return grown.map((t) => t.name)
}
