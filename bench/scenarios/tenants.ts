import { setTimeout as sleep } from 'node:timers/promises'
import type { Bench, Figures, Scenario } from '../support.ts'
import type { Scheduling, Tenant } from './installation.ts'
import {
  audienceBatch,
  latencySummary,
  listedBatch,
  MEMBERS,
  type SinkWatch,
  transactional,
  withTenantLoad,
} from './tenant-load.ts'

/** The other tenants' transactional mail, in total a second. */
export const PER_SECOND = 20
/** How long the transactional mail runs alone (BENCH_TENANT_SECONDS). */
const ALONE_SECONDS = Number(process.env.BENCH_TENANT_SECONDS ?? 30)
const P99_TARGET_MS = 2_000
const SHARE_TARGET = 0.8
/** The pacing phase: one tenant's many connections beside another's one, each at this rate a minute. */
const PACED_CONNECTIONS = 50
const PACED_RATE = Number(process.env.BENCH_PACED_RATE ?? 300)
const PACED_SECONDS = Number(process.env.BENCH_PACED_SECONDS ?? 20)

/** Queue runs without slices (a run keeps its worker slot while its connection has mail due), then in slices. */
const VARIANTS: { label: string; scheduling: Scheduling }[] = [
  { label: 'runs unbounded', scheduling: { slice: 'unbounded' } },
  { label: '1 s slices, one priority', scheduling: { backlogPriority: 0 } },
  { label: '1 s slices, backlogs behind', scheduling: {} },
]

const met = (ok: boolean) => (ok ? 'met' : 'MISSED')

/**
 * Two hundred tenants on one installation, each with a connection of its own: ten start a batch
 * to an audience of their own at once while the other 190 send transactional mail at 20 a second
 * in total, each timed from its request until it reached the sink, beside the same mail with no
 * batch; and the batches' throughput beside one batch alone. Then one tenant's 50 paced
 * connections beside another's one, each connection's deliveries counted. Each with queue runs
 * unbounded and in slices, in the same run.
 */
export const tenants: Scenario = {
  name: 'tenants',
  run: (bench: Bench) =>
    withTenantLoad(bench, 'tenants', async ({ installation, watch, batchers, audiences, senders }) => {
      const many = await installation.addTenant('paced-many', PACED_CONNECTIONS, PACED_RATE)
      const one = await installation.addTenant('paced-one', 1, PACED_RATE)
      await installation.workers(1)
      const rows = [await transactionalAlone(watch, senders)]
      for (const { label, scheduling } of VARIANTS) {
        await installation.workers(1, scheduling)
        rows.push(...(await batchesBeside(watch, batchers, audiences, senders, label)))
        rows.push(await pacedNeighbours(watch, many, one, label))
      }
      return rows
    }),
}

async function transactionalAlone(watch: SinkWatch, senders: Tenant[]): Promise<Figures> {
  watch.reset()
  const count = await transactional(watch, senders, PER_SECOND, sleep(ALONE_SECONDS * 1000))
  return transactionalRow(
    `${senders.length} tenants' /enqueue, ${PER_SECOND}/s, no batch`,
    watch,
    count,
    ALONE_SECONDS,
  )
}

function transactionalRow(name: string, watch: SinkWatch, count: number, seconds: number): Figures {
  const { p50, p99, max } = latencySummary(watch.latencies)
  const note =
    `request → sink p50 ${p50.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms, max ${max.toFixed(0)} ms ` +
    `over ${watch.latencies.length} emails (p99 target < ${P99_TARGET_MS} ms: ${met(p99 < P99_TARGET_MS)})`
  return { name, count, seconds, latencies: watch.latencies, paced: true, note }
}

/**
 * One batch alone, then every batcher's at once beside the transactional mail, which runs until
 * the last batch recipient arrived.
 */
export async function batchesBeside(
  watch: SinkWatch,
  batchers: Tenant[],
  audiences: number[],
  senders: Tenant[],
  label: string,
): Promise<Figures[]> {
  watch.reset()
  let started = performance.now()
  await audienceBatch(batchers[0] as Tenant, audiences[0] as number)
  await watch.until('one batch', () => watch.batchMessages >= MEMBERS)
  const aloneSeconds = (performance.now() - started) / 1000
  watch.reset()
  started = performance.now()
  let togetherSeconds = 0
  const batches = (async () => {
    await Promise.all(batchers.map((t, i) => audienceBatch(t, audiences[i] as number)))
    await watch.until('every batch', () => watch.batchMessages >= batchers.length * MEMBERS)
    togetherSeconds = (performance.now() - started) / 1000
  })()
  const count = await transactional(watch, senders, PER_SECOND, batches)
  const share = (batchers.length * MEMBERS) / togetherSeconds / (MEMBERS / aloneSeconds)
  return [
    {
      name: `1 batch ×${MEMBERS} alone → delivered (${label})`,
      count: MEMBERS,
      seconds: aloneSeconds,
      latencies: [],
    },
    {
      name: `${batchers.length} batches ×${MEMBERS} at once → delivered (${label})`,
      count: batchers.length * MEMBERS,
      seconds: togetherSeconds,
      latencies: [],
      note: `throughput ${share.toFixed(2)} of one batch alone (target ≥ ${SHARE_TARGET}: ${met(share >= SHARE_TARGET)})`,
    },
    transactionalRow(
      `${senders.length} tenants' /enqueue beside the batches (${label})`,
      watch,
      count,
      togetherSeconds,
    ),
  ]
}

/**
 * A batch on each of `many`'s connections and on `one`'s, all at once, each big enough to keep its
 * connection busy through the window; each connection's deliveries in the window against its
 * pacing. The batches are canceled after it.
 */
async function pacedNeighbours(watch: SinkWatch, many: Tenant, one: Tenant, label: string): Promise<Figures> {
  const perSecond = PACED_RATE / 60
  const recipients = Math.min(1000, Math.ceil(perSecond * PACED_SECONDS * 2))
  const started = [
    ...many.connections.map((c) => ({ tenant: many, from: c.from })),
    ...one.connections.map((c) => ({ tenant: one, from: c.from })),
  ]
  const ids = await Promise.all(
    started.map(async ({ tenant, from }) => {
      const reply = (await listedBatch(tenant, from, recipients)) as { batch_id: number }
      return { tenant, id: reply.batch_id }
    }),
  )
  watch.reset()
  await sleep(PACED_SECONDS * 1000)
  const rates = (t: Tenant) => t.connections.map((c) => (watch.byFrom.get(c.from) ?? 0) / PACED_SECONDS)
  const manyRates = rates(many).sort((a, b) => a - b)
  const oneRate = rates(one)[0] ?? 0
  await Promise.all(ids.map(({ tenant, id }) => tenant.post(`/batches/${id}/cancel`, {}).catch(() => {})))
  // The attempts under way at the cancel arrive meanwhile, outside the next phase's counts.
  await sleep(2_000)
  const idle = manyRates.filter((r) => r === 0).length
  const bounded = (r: number) => r >= 0.8 * perSecond
  const note =
    `each connection paced at ${perSecond.toFixed(1)}/s: the one-connection tenant sent ${oneRate.toFixed(1)}/s; ` +
    `the ${PACED_CONNECTIONS} of the other min ${manyRates[0]?.toFixed(1)}, median ` +
    `${manyRates[Math.floor(manyRates.length / 2)]?.toFixed(1)}, max ${manyRates.at(-1)?.toFixed(1)}/s, ${idle} sent nothing ` +
    `(each at ≥ 0.8 of its pacing: ${met(bounded(oneRate) && manyRates.every(bounded))})`
  const count = [...manyRates, oneRate].reduce((sum, r) => sum + r * PACED_SECONDS, 0)
  return {
    name: `${PACED_CONNECTIONS} + 1 paced connections, ${PACED_SECONDS} s (${label})`,
    count,
    seconds: PACED_SECONDS,
    latencies: [],
    note,
  }
}
