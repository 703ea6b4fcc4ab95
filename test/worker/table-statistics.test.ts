/**
 * A running worker keeps the tables' statistics up with their growth: a table that changed by
 * as many rows as it held at its last ANALYZE (and by at least a few hundred) is analyzed, so that
 * a new installation's statements are planned for the tables as they are, not as they were empty.
 */
import { describe, expect, it } from 'vitest'
import { ANALYZE_AFTER_ROWS } from '../../src/db/statistics.ts'
import { seedAccount, useTestApp } from '../support/app.ts'
import { waitFor } from '../support/queue.ts'

const app = useTestApp({}, { each: true })

/** When the table was last analyzed by a statement (autovacuum's own are counted apart). */
async function lastAnalyzed(table: string): Promise<Date | null> {
  const [row] = await app.services.sql<{ at: Date | null }[]>`
    select last_analyze as at from pg_stat_user_tables where schemaname = 'public' and relname = ${table}`
  return row?.at ?? null
}

describe('table statistics while the worker runs', () => {
  it('a table grown by enough rows is analyzed; one barely changed is not', { timeout: 60_000 }, async () => {
    const { key } = await seedAccount(app, { plan: 'pro' })
    const reply = await app.request('/audiences', { method: 'POST', key, body: { name: 'Growing' } })
    const { audience } = (await reply.json()) as { audience: { id: number } }
    await app.worker()
    await app.services.sql`
      insert into audience_members (audience_id, email, payload)
      select ${audience.id}, 'member' || i || '@example.com', '{}'::jsonb
      from generate_series(1, ${2 * ANALYZE_AFTER_ROWS}::int) as i`
    const analyzedAt = await waitFor(
      'the grown table to be analyzed',
      async () => (await lastAnalyzed('audience_members')) ?? undefined,
      30_000,
    )
    expect(analyzedAt).toBeInstanceOf(Date)
    const [stats] = await app.services.sql<{ rows: number }[]>`
      select reltuples::int as rows from pg_class where oid = 'audience_members'::regclass`
    expect(stats?.rows).toBe(2 * ANALYZE_AFTER_ROWS)
    // One audience row: well under the bound, its plans cost nothing whatever they chose.
    expect(await lastAnalyzed('audiences')).toBeNull()
  })
})
