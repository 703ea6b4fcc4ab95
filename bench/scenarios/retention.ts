import http from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import { createAccount } from '../../src/accounts/accounts.ts'
import type { Sql } from '../../src/db/sql.ts'
import { PURGE_PACE, type PurgePace, purgeExpired } from '../../src/sending/retention.ts'
import { fillExpired } from '../fill/expired.ts'
import { type Bench, type Figures, message, type Scenario } from '../support.ts'

/**
 * Retention at scale: a Free account's records past its 7 days (2 million at 10 million records,
 * a fifth of the fill below that, 100,000 on an empty database), purged by the worker's own
 * purge (purgeExpired) while /send runs at full speed and /health is asked every 50 ms, three
 * times: all in one statement, in chunks, and in chunks with pauses as the service does. Then the outbox's size, right after and once autovacuum
 * (as configured) has been by, or not.
 */
const VACUUM_WAIT_SECONDS = Number(process.env.BENCH_VACUUM_WAIT ?? 90)
const NOT_STALLED = { p99UnderMs: 100 }

function expiring(bench: Bench): number {
  const asked = process.env.BENCH_RETENTION_RECORDS
  if (asked) return Number(asked)
  const records = bench.fill?.shape.records ?? 0
  return records >= 10_000_000 ? 2_000_000 : Math.max(100_000, Math.round(records / 5))
}

interface Sizes {
  outbox: number
  attempts: number
  dead: number
  vacuumed: string | null
}

async function sizes(sql: Sql): Promise<Sizes> {
  const [row] = await sql<Sizes[]>`
    select pg_total_relation_size('outbox')::float8 as outbox, pg_total_relation_size('outbox_attempts')::float8 as attempts,
      (select n_dead_tup::float8 from pg_stat_user_tables where relname = 'outbox') as dead,
      (select last_autovacuum::text from pg_stat_user_tables where relname = 'outbox') as vacuumed`
  if (!row) throw new Error('no sizes')
  return row
}

const shown = (s: Sizes) =>
  `outbox ${(s.outbox / 2 ** 20).toFixed(0)} MiB, attempts ${(s.attempts / 2 ** 20).toFixed(0)} MiB, ${s.dead.toFixed(0)} dead rows`

/** Runs `one` `concurrency` at a time until `stop.done`, each latency kept. */
async function until(stop: { done: boolean }, concurrency: number, one: (i: number) => Promise<unknown>) {
  const latencies: number[] = []
  let next = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (!stop.done) {
        const t0 = performance.now()
        await one(next++)
        latencies.push(performance.now() - t0)
      }
    }),
  )
  return latencies
}

function health(url: string): Promise<void> {
  return new Promise((resolve, reject) =>
    http.get(`${url}/health`, (r) => r.resume().on('end', resolve)).on('error', reject),
  )
}

async function waitForAutovacuum(sql: Sql, before: string | null): Promise<Sizes> {
  const deadline = performance.now() + VACUUM_WAIT_SECONDS * 1000
  let now = await sizes(sql)
  while (now.vacuumed === before && performance.now() < deadline) {
    await sleep(5000)
    now = await sizes(sql)
  }
  return now
}

/**
 * One expiry and its purge: `count` expired records made, then purged at `pace` while /send and /health are asked; the sizes before, with them, right after, and after
 * autovacuum's visit when it came.
 */
async function cycle(bench: Bench, count: number, pace: PurgePace, label: string): Promise<Figures[]> {
  const sql = bench.services.sql
  const account = await createAccount(sql, { email: `free-${Date.now()}@expiring.example`, plan: 'free' })
  const before = await sizes(sql)
  await fillExpired(sql, account.id, count)
  await sql`analyze outbox`
  const filled = await sizes(sql)
  const stop = { done: false }
  const sending = until(stop, bench.concurrency, (i) =>
    bench.post('/send', message(4_000_000 + i, bench.from)),
  )
  const asking = until(stop, 1, () => health(bench.url).then(() => sleep(50)))
  const started = performance.now()
  const purged = await purgeExpired(sql, pace)
  const seconds = (performance.now() - started) / 1000
  stop.done = true
  const [sent, healthy] = await Promise.all([sending, asking])
  const after = await sizes(sql)
  const vacuumed = await waitForAutovacuum(sql, after.vacuumed)
  const note = [
    `${purged.outbox} of ${count} expired records purged in ${seconds.toFixed(1)} s`,
    `before the expired records: ${shown(before)}`,
    `with them: ${shown(filled)}`,
    `right after the purge: ${shown(after)}`,
    vacuumed.vacuumed === after.vacuumed
      ? `autovacuum did not visit outbox within ${VACUUM_WAIT_SECONDS} s: ${shown(vacuumed)}`
      : `after autovacuum (${vacuumed.vacuumed}): ${shown(vacuumed)}`,
  ].join('\n')
  const during = (name: string, latencies: number[]): Figures => ({
    name: `${name} during the purge ${label}`,
    count: latencies.length,
    seconds,
    latencies,
    target: NOT_STALLED,
  })
  return [
    { ...during('POST /send', sent), fullSpeed: true },
    { ...during('GET /health', healthy), paced: true },
    { name: `purge ${label}`, count: 1, seconds, latencies: [], paced: true, note },
  ]
}

export const retention: Scenario = {
  name: 'retention',
  onlyWhenNamed: true,
  async run(bench: Bench) {
    const count = expiring(bench)
    const calm = await bench.measure('POST /send, no purge', (i) =>
      bench.post('/send', message(3_000_000 + i, bench.from)),
    )
    // All in one statement, as the purge was; in chunks without a pause; then as it is, in
    // chunks with its pauses. The later expiries also show whether the space the first left
    // is used again.
    const { chunk } = PURGE_PACE
    const forms: [PurgePace, string][] = [
      [{ chunk: count + 1, rest: 0 }, 'in one statement'],
      [{ chunk, rest: 0 }, `${chunk} a statement`],
      [PURGE_PACE, `${chunk} a statement, paced`],
    ]
    // At 10 million each expiry takes minutes to make: BENCH_RETENTION_PACED_ONLY keeps the service's own form.
    const chosen = process.env.BENCH_RETENTION_PACED_ONLY ? forms.slice(-1) : forms
    const rows: Figures[] = [{ ...calm, target: NOT_STALLED }]
    for (const [pace, label] of chosen) rows.push(...(await cycle(bench, count, pace, label)))
    return rows
  },
}
