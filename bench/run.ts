/**
 * `npm run bench`: every scenario of bench/scenarios against ONE connection at full speed (rate
 * 60000 a minute), side by side with raw pooled nodemailer sending to the same sink in the same
 * run, `BENCH_CONCURRENCY` (16) senders at a time. Prints figures and the targets; asserts nothing.
 *
 * Everything runs on this machine: the service as a process of its own (`mailroom start`, its
 * embedded PostgreSQL in a temporary dir, logging at info as in production), an smtp-server sink
 * on a loopback address at port 587 (STARTTLS) in this process, and the load from this process.
 */
import { spawn } from 'node:child_process'
import { readFile, rm } from 'node:fs/promises'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { buffer } from 'node:stream/consumers'
import { fileURLToPath } from 'node:url'
import { createAccount } from '../src/accounts/accounts.ts'
import { loadConfig } from '../src/config.ts'
import { addConnection } from '../src/connections/connections.ts'
import { openTempDir } from '../src/db/postgres-server.ts'
import { createKey } from '../src/keys/keys.ts'
import { createLogger } from '../src/log.ts'
import { openServices } from '../src/open-services.ts'
import { startSmtpSink } from '../test/support/smtp-sink.ts'
import { createTlsMaterial } from '../test/support/tls.ts'
import { ensureFill, fillDataDir } from './fill/fill.ts'
import { shapeOf } from './fill/shape.ts'
import { SCENARIOS } from './scenarios/index.ts'
import { bracketing, measureRaw } from './scenarios/raw.ts'
import { startService } from './service.ts'
import { type Figures, makeBench, message, percentile, WARM_UP } from './support.ts'

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16)
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 2000)
const ONLY = process.env.BENCH_ONLY?.split(',')
/** Outbox records filled in before the rows (0: none, on a new database of its own). */
const SCALE = Number(process.env.BENCH_SCALE ?? 0)

async function main() {
  const { BENCH_DIR, BENCH_TLS } = process.env
  if (!BENCH_DIR || !BENCH_TLS) {
    return runInTrustingChild()
  }

  // A filled database is kept between runs (bench/fill/fill.ts); an empty one is the run's own.
  const shape = shapeOf(process.env, SCALE)
  const dataDir = SCALE > 0 ? await fillDataDir(shape) : path.join(BENCH_DIR, 'data')
  const sink = await startSmtpSink({ port: 587, tls: JSON.parse(BENCH_TLS) })
  // BENCH_SERVICE_LOG keeps the service's log past the run (the bench's directory is removed).
  const service = await startService(
    dataDir,
    process.env.BENCH_SERVICE_LOG ?? path.join(BENCH_DIR, 'service.log'),
  )
  const services = await openServices(
    {
      ...loadConfig({}),
      dataDir,
      dataDirIsDefault: false,
      allowPrivateSmtpHosts: true,
      allowPrivateWebhookUrls: true,
    },
    createLogger('warn'),
  )
  try {
    const fill = SCALE > 0 ? await ensureFill(services.sql, dataDir, shape) : undefined
    // A kept database holds the accounts of the runs before: each run's is new.
    const from = fill ? `bench-${Date.now()}@example.com` : 'bench@example.com'
    const account = await createAccount(services.sql, { email: from, plan: 'pro' })
    await addConnection(services, { accountId: account.id, ...sink.login, from, rate: 60_000 })
    const { key } = await createKey(services.sql, { accountId: account.id, name: 'bench' })
    // node:http with kept-alive sockets: the load generator should cost as little CPU as it can.
    const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY })
    const post = poster(`${service.url}/v1`, key, agent)
    const bench = makeBench(
      { url: service.url, key, from, sink, services, accountId: account.id, post, fill },
      {
        concurrency: CONCURRENCY,
        messages: MESSAGES,
        servicePid: service.pid,
        postgresPid: async () =>
          Number((await readFile(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0]),
      },
    )
    // A service just started on a new database is not yet the one the rows mean to measure.
    // PostgreSQL keeps the plans it made while the tables were empty until autovacuum's first
    // ANALYZE, within a minute of a real service's start; the first row measured 0.43 to 0.53
    // of raw where the same row measured later gave 0.72. So a first round of sends runs outside
    // the figures, then the ANALYZE autovacuum would have made.
    await bench.measure('settling', (i) => bench.post('/send', message(2_000_000 + i, from)))
    await services.sql`analyze`
    const rows: Figures[] = []
    for (const scenario of SCENARIOS) {
      if (ONLY ? !ONLY.includes(scenario.name) : scenario.onlyWhenNamed) continue
      // The baseline again, right before and right after each scenario: the machine's speed
      // drifts within a run (raw gave 722 and 964 msg/s half a minute apart), and a raw row on
      // one side only would compare the scenario with another machine. The two together bracket it.
      const before = await measureRaw(bench)
      const measured = await scenario.run(bench)
      const baseline = bracketing(before, await measureRaw(bench))
      rows.push(baseline, ...measured.map((row) => ({ ...row, baseline })))
    }
    report(rows)
  } finally {
    await services.close()
    await service.stop()
    await sink.close()
  }
}

/**
 * Node reads NODE_EXTRA_CA_CERTS only at start: the bench measures in a child of its own that
 * trusts the bench's CA, in a temporary directory removed once it ends.
 */
async function runInTrustingChild(): Promise<never> {
  const dir = await openTempDir('mailroom-bench-')
  const tls = await createTlsMaterial(path.join(dir, 'tls'))
  const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url)], {
    stdio: 'inherit',
    env: {
      ...process.env,
      NODE_EXTRA_CA_CERTS: tls.caPath,
      BENCH_DIR: dir,
      BENCH_TLS: JSON.stringify(tls),
    },
  })
  const code = await new Promise<number>((resolve) => child.on('exit', (c) => resolve(c ?? 1)))
  await rm(dir, { recursive: true, force: true })
  process.exit(code)
}

/** POSTs JSON to `base` with `key` over `agent`: the answer's body, or a rejection above 2xx. */
function poster(base: string, key: string, agent: http.Agent) {
  return (apiPath: string, body: unknown, headers: Record<string, string> = {}) =>
    new Promise<unknown>((resolve, reject) => {
      const payload = JSON.stringify(body)
      const request = http.request(
        `${base}${apiPath}`,
        {
          method: 'POST',
          agent,
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(payload),
            ...headers,
          },
        },
        async (response) => {
          const text = await buffer(response).then((b) => b.toString())
          const status = response.statusCode ?? 0
          if (status >= 300) reject(new Error(`POST ${apiPath} answered ${status}: ${text}`))
          else resolve(JSON.parse(text))
        },
      )
      request.on('error', reject)
      request.end(payload)
    })
}

function report(rows: Figures[]) {
  const rateOf = (f: Figures) => f.count / f.seconds
  const p50Of = (f: Figures) =>
    percentile(
      [...f.latencies].sort((a, b) => a - b),
      50,
    )
  console.log(
    `\nOne connection (rate 60000/min), ${CONCURRENCY} requests at a time, ${MESSAGES} messages per request row,\n` +
      'TLS sink on loopback (STARTTLS, port 587); queue and batch rows are timed from the first request\n' +
      'until the last message reached the sink. RSS: the service process, peak during the row. CPU: per\n' +
      'message, in the service, its PostgreSQL and this process (the load and the sink). Measured after\n' +
      `${WARM_UP + MESSAGES} /sends to settle the new service and an ANALYZE; each raw, /send and /enqueue row\n` +
      `after ${WARM_UP} of its own messages (those of /enqueue delivered too). Each scenario's rows are\n` +
      'compared with the raw row just above them, measured right before and right after the scenario\n' +
      "(the two together): the machine's speed drifts within a run.\n",
  )
  const header = [
    '',
    'msg/s',
    'vs raw',
    'p50 ms',
    'p95 ms',
    'p99 ms',
    'RSS MiB',
    'CPU ms/msg svc+pg+bench',
    'target',
  ]
  const lines = rows.map((f) => {
    const sorted = [...f.latencies].sort((a, b) => a - b)
    const rate = rateOf(f)
    const ratio = f.baseline ? rate / rateOf(f.baseline) : 1
    const latency = (p: number) => (sorted.length ? percentile(sorted, p).toFixed(1) : '-')
    let target = ''
    if (f.target && 'p99UnderMs' in f.target) {
      const met = sorted.length > 0 && percentile(sorted, 99) < f.target.p99UnderMs
      target = `p99 < ${f.target.p99UnderMs} ms: ${met ? 'met' : 'MISSED'}`
    } else if (f.target && f.baseline) {
      const met =
        ratio >= f.target.ratio &&
        (f.target.p50WithinMs === undefined || p50Of(f) - p50Of(f.baseline) <= f.target.p50WithinMs)
      const p50 = f.target.p50WithinMs ? `, p50 ≤ raw+${f.target.p50WithinMs}` : ''
      target = `≥${f.target.ratio}${p50}: ${met ? 'met' : 'MISSED'}`
    }
    return [
      f.name,
      f.paced ? '-' : rate.toFixed(0),
      f.paced ? '-' : ratio.toFixed(2),
      latency(50),
      latency(95),
      latency(99),
      f.peakRssMiB === undefined ? '-' : f.peakRssMiB.toFixed(0),
      f.cpuMs ? [f.cpuMs.service, f.cpuMs.postgres, f.cpuMs.bench].map((ms) => ms.toFixed(1)).join('+') : '-',
      target,
    ]
  })
  const widths = header.map((h, c) => Math.max(h.length, ...lines.map((r) => (r[c] ?? '').length)))
  for (const row of [header, ...lines]) {
    const cells = row.map((cell, c) =>
      c === 0 || c === 8 ? cell.padEnd(widths[c] ?? 0) : cell.padStart(widths[c] ?? 0),
    )
    console.log(cells.join('  ').trimEnd())
  }
  for (const f of rows) if (f.note) console.log(`\n${f.name}: ${f.note}`)
  const load = os.loadavg().map((l) => l.toFixed(1))
  console.log(
    `\nLoad average at the end (1, 5, 15 min): ${load.join(', ')} on ${os.availableParallelism()} cores`,
  )
  const fullSpeed = rows.filter((r) => r.fullSpeed)
  if (fullSpeed.length > 0) {
    const peak = Math.max(...fullSpeed.map((r) => r.peakRssMiB ?? 0))
    const target = 200e6 / 2 ** 20
    console.log(
      `Service peak RSS at full speed (/send, /enqueue, batch): ${peak.toFixed(0)} MiB ` +
        `(target under 200 MB, ${target.toFixed(1)} MiB: ${peak < target ? 'met' : 'MISSED'})`,
    )
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
