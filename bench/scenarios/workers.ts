import { setTimeout as sleep } from 'node:timers/promises'
import type { Bench, Figures, Scenario } from '../support.ts'
import type { Installation, Tenant } from './installation.ts'
import { audienceBatch, type SinkWatch, seedAudience, withTenantLoad } from './tenant-load.ts'
import { batchesBeside } from './tenants.ts'

/** Emails of each kind whose statements are counted (BENCH_COUNTED). */
const COUNTED = Number(process.env.BENCH_COUNTED ?? 1000)
const IDLE_SECONDS = 5

/**
 * The two hundred tenants' load (./tenants.ts) with one worker process, then two; then, with one,
 * the statements and transactions PostgreSQL ran per email sent by `/send`, by `/enqueue` and as
 * a batch's recipient (pg_stat_statements, top-level statements: each one round trip at most),
 * less what the idle installation runs meanwhile (the workers' polls and heartbeats).
 */
export const workers: Scenario = {
  name: 'workers',
  run: (bench: Bench) =>
    withTenantLoad(bench, 'workers', async ({ installation, watch, batchers, audiences, senders }) => {
      const rows: Figures[] = []
      for (const count of [1, 2]) {
        await installation.workers(count)
        const label = `${count} worker process${count > 1 ? 'es' : ''}`
        rows.push(...(await batchesBeside(watch, batchers, audiences, senders, label)))
      }
      await installation.workers(1)
      rows.push(...(await statementsPerEmail(bench, installation, watch, senders[0] as Tenant)))
      return rows
    }),
}

interface Counts {
  statements: number
  transactions: number
  at: number
}

async function counts(installation: Installation): Promise<Counts> {
  const [row] = await installation.services.sql<{ statements: string; transactions: string }[]>`
    select (select coalesce(sum(calls), 0) from pg_stat_statements) as statements,
      (select xact_commit + xact_rollback from pg_stat_database where datname = current_database()) as transactions`
  return {
    statements: Number(row?.statements),
    transactions: Number(row?.transactions),
    at: performance.now(),
  }
}

async function statementsPerEmail(
  bench: Bench,
  installation: Installation,
  watch: SinkWatch,
  tenant: Tenant,
): Promise<Figures[]> {
  const from = tenant.connections[0]?.from as string
  await installation.services.sql`select pg_stat_statements_reset()`
  const idleFrom = await counts(installation)
  await sleep(IDLE_SECONDS * 1000)
  const idle = await counts(installation)
  const perMs = (k: 'statements' | 'transactions') => (idle[k] - idleFrom[k]) / (idle.at - idleFrom.at)
  const counted = async (name: string, run: () => Promise<void>): Promise<Figures> => {
    watch.reset()
    const before = await counts(installation)
    await run()
    const after = await counts(installation)
    const per = (k: 'statements' | 'transactions') =>
      (after[k] - before[k] - perMs(k) * (after.at - before.at)) / COUNTED
    const seconds = (after.at - before.at) / 1000
    const note =
      `${per('statements').toFixed(1)} statements and ${per('transactions').toFixed(1)} transactions per email ` +
      `(less the idle installation's ${(perMs('statements') * 1000).toFixed(0)} statements a second)`
    return { name: `${name}: statements counted`, count: COUNTED, seconds, latencies: [], note }
  }
  const delivered = (what: string) => watch.until(what, () => (watch.byFrom.get(from) ?? 0) >= COUNTED)
  const each = async (path: '/send' | '/enqueue') => {
    let next = 0
    await Promise.all(
      Array.from({ length: bench.concurrency }, async () => {
        while (next < COUNTED) {
          const i = next++
          await tenant.post(path, { from, to: `s${i}@example.com`, subject: `Counted ${i}`, text_body: 'Hi' })
        }
      }),
    )
  }
  const audience = await seedAudience(installation, tenant, COUNTED)
  return [
    await counted(`${COUNTED} /send`, () => each('/send').then(() => delivered('the /sends'))),
    await counted(`${COUNTED} /enqueue → delivered`, () =>
      each('/enqueue').then(() => delivered('the /enqueues')),
    ),
    await counted(`1 batch ×${COUNTED} → delivered`, async () => {
      await audienceBatch(tenant, audience)
      await delivered('the batch')
    }),
  ]
}
