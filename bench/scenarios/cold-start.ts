import type { Bench, Figures, Scenario } from '../support.ts'
import { openInstallation, type Tenant } from './installation.ts'

/** `/send`s in each phase (BENCH_COLD_SENDS). */
const SENDS = Number(process.env.BENCH_COLD_SENDS ?? 3000)

/**
 * A new installation's first `/send`s against the same after an ANALYZE, on a new database each:
 * with no worker (nothing analyzes the tables but autovacuum, once a minute), then with one
 * (which analyzes a table each time it doubled: src/worker/table-statistics.ts).
 */
export const coldStart: Scenario = {
  name: 'cold-start',
  async run(bench: Bench) {
    const rows: Figures[] = []
    for (const workers of [0, 1]) {
      const label = workers ? 'a worker analyzing as tables grow' : 'no worker: autovacuum alone'
      const installation = await openInstallation(bench, `cold-start-${workers}`, 1)
      try {
        await installation.workers(workers)
        const tenant = installation.tenants[0] as Tenant
        const cold = await sends(bench, tenant, `first ${SENDS} /send on a new database (${label})`)
        // What autovacuum gives a real service within a minute or so.
        await installation.services.sql`analyze`
        const warm = await sends(bench, tenant, `next ${SENDS} /send after an ANALYZE (${label})`)
        const share = cold.count / cold.seconds / (warm.count / warm.seconds)
        rows.push({ ...cold, note: `${share.toFixed(2)} of the speed after the ANALYZE` }, warm)
      } finally {
        await installation.close()
      }
    }
    return rows
  },
}

/** SENDS `/send`s of the tenant, `bench.concurrency` at a time, with their latencies. */
async function sends(bench: Bench, tenant: Tenant, name: string): Promise<Figures> {
  const from = tenant.connections[0]?.from
  const latencies: number[] = []
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: bench.concurrency }, async () => {
      while (next < SENDS) {
        const i = next++
        const t0 = performance.now()
        await tenant.post('/send', {
          from,
          to: `c${i}@example.com`,
          subject: `Cold ${i}`,
          text_body: 'Hello',
        })
        latencies.push(performance.now() - t0)
      }
    }),
  )
  return { name, count: SENDS, seconds: (performance.now() - started) / 1000, latencies }
}
