/**
 * `npm run bench`: POST /send through Mailroom, side by side with a baseline that hands the same
 * messages to the same TLS SMTP sink straight through nodemailer. Prints figures; asserts nothing.
 *
 * Everything runs on this machine: an embedded PostgreSQL in a temp dir, an smtp-server sink on
 * a loopback address at port 587 (STARTTLS), and the real HTTP server.
 */
import { spawn } from 'node:child_process'
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import nodemailer from 'nodemailer'
import { createAccount } from '../src/accounts/accounts.ts'
import { loadConfig } from '../src/config.ts'
import { addConnection } from '../src/connections/connections.ts'
import { startHttpServer } from '../src/http/server.ts'
import { createKey } from '../src/keys/keys.ts'
import { createLogger } from '../src/log.ts'
import { openServices } from '../src/open-services.ts'
import { resolveSmtpHost } from '../src/smtp/host.ts'
import { smtpTransportOptions } from '../src/smtp/transport.ts'
import { startWorker } from '../src/worker/worker.ts'
import { startSmtpSink } from '../test/support/smtp-sink.ts'
import { createTlsMaterial } from '../test/support/tls.ts'

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 400)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8)

interface Figures {
  name: string
  /** Messages the run sent. */
  count: number
  seconds: number
  /** Per-request latencies; empty for runs timed as a whole (queue, batches). */
  latencies: number[]
}

const QUEUED = Number(process.env.BENCH_QUEUED ?? 2000)
const BATCH = 1000
const IMPORT = 10_000

async function main() {
  const { BENCH_DIR, BENCH_TLS } = process.env
  if (!BENCH_DIR || !BENCH_TLS) {
    // Node reads NODE_EXTRA_CA_CERTS only at start: measure in a child that trusts the bench CA.
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mailroom-bench-'))
    await chmod(dir, 0o755)
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

  const dir = BENCH_DIR
  const sink = await startSmtpSink({ port: 587, tls: JSON.parse(BENCH_TLS) })
  const config = {
    ...loadConfig({}),
    dataDir: path.join(dir, 'data'),
    allowPrivateSmtpHosts: true,
    logLevel: 'warn',
  }
  const services = await openServices(config, createLogger('warn'))
  const server = await startHttpServer(services, 0, '127.0.0.1')
  try {
    const account = await createAccount(services.sql, { email: 'bench@example.com', plan: 'pro' })
    // Pacing caps one connection at 100 messages a second (6000 a minute), so each concurrent
    // sender gets a connection of its own: the figures are then the send path's, not the pacer's.
    for (let c = 0; c < CONCURRENCY; c++) {
      await addConnection(services, { accountId: account.id, ...sink.login, from: sender(c), rate: 6000 })
    }
    const { key } = await createKey(services.sql, { accountId: account.id, name: 'bench' })
    const message = (i: number) => ({
      from: sender(i % CONCURRENCY),
      to: `r${i}@example.com`,
      subject: `Bench ${i}`,
      text_body: 'Hello from the bench',
    })

    const transport = nodemailer.createTransport(
      smtpTransportOptions(sink.login, await resolveSmtpHost(sink.host, true), { pool: true }),
    )
    const baseline = await measure('nodemailer → sink (baseline)', (i) =>
      transport.sendMail(toMail(message(i))),
    )
    transport.close()

    const send = (i: number, headers: Record<string, string> = {}) =>
      fetch(`${server.url}/v1/send`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
        body: JSON.stringify(message(i)),
      }).then(async (response) => {
        if (response.status !== 200)
          throw new Error(`POST /send answered ${response.status}: ${await response.text()}`)
      })
    const viaMailroom = await measure('POST /send', (i) => send(i))
    const withKeys = await measure('POST /send + Idempotency-Key', (i) =>
      send(i, { 'idempotency-key': `bench-${i}` }),
    )
    const replays = await measure('POST /send replay (same keys)', (i) =>
      send(i, { 'idempotency-key': `bench-${i}` }),
    )

    const api = (path: string, body: unknown) =>
      fetch(`${server.url}/v1${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then(async (response) => {
        if (response.status >= 300)
          throw new Error(`POST ${path} answered ${response.status}: ${await response.text()}`)
        return response.json()
      })
    const delivered = (count: number) => sink.waitForMessages(sink.messages.length + count, 300_000)
    const worker = await startWorker(services)
    let queue: Figures
    let oneBatch: Figures
    let eightBatches: Figures
    try {
      queue = await timed(`POST /enqueue ×${QUEUED} → delivered`, QUEUED, async () => {
        const arrived = delivered(QUEUED)
        let next = 0
        await Promise.all(
          Array.from({ length: CONCURRENCY }, async () => {
            while (next < QUEUED) await api('/enqueue', message(next++))
          }),
        )
        await arrived
      })
      const template = { subject: 'Bench {{first_name}}', text_body: 'Hello from the bench' }
      oneBatch = await timed(`1 batch ×${BATCH} (one connection) → delivered`, BATCH, async () => {
        const arrived = delivered(BATCH)
        await api('/send/batch', { from: sender(0), template, recipients: addresses(BATCH, 'one') })
        await arrived
      })
      eightBatches = await timed(
        `${CONCURRENCY} batches ×${BATCH / CONCURRENCY} (a connection each)`,
        BATCH,
        async () => {
          const arrived = delivered(BATCH)
          await Promise.all(
            Array.from({ length: CONCURRENCY }, (_, c) =>
              api('/send/batch', {
                from: sender(c),
                template,
                recipients: addresses(BATCH / CONCURRENCY, `b${c}-`),
              }),
            ),
          )
          await arrived
        },
      )
    } finally {
      await worker.stop()
    }
    report([baseline, viaMailroom, withKeys, replays, queue, oneBatch, eightBatches])

    const { audience } = (await api('/audiences', { name: 'Bench import' })) as { audience: { id: number } }
    const members = addresses(IMPORT, 'member').map((email, i) => ({
      email,
      payload: { first_name: `M${i}` },
    }))
    const started = performance.now()
    await api(`/audiences/${audience.id}/members`, { members })
    console.log(
      `\nPOST /audiences/{id}/members with ${IMPORT} members: ${((performance.now() - started) / 1000).toFixed(3)} s`,
    )
    console.log(
      '\nA single batch goes through one connection, whose pacing allows at most 6000 messages a minute\n' +
        '(100 a second, the highest rate the contract allows): its figure is bounded by that, not by the machinery.',
    )
  } finally {
    await server.close()
    await services.close()
    await sink.close()
  }
}

function addresses(n: number, tag: string): string[] {
  return Array.from({ length: n }, (_, i) => `${tag}${i}@example.com`)
}

function sender(c: number): string {
  return `bench${c}@example.com`
}

function toMail(m: { from: string; to: string; subject: string; text_body: string }) {
  return { from: m.from, to: m.to, subject: m.subject, text: m.text_body }
}

async function measure(name: string, one: (i: number) => Promise<unknown>): Promise<Figures> {
  // Warm-up: connections, pools and prepared statements, outside the figures.
  await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => one(1_000_000 + i)))
  const latencies: number[] = []
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < MESSAGES) {
        const i = next++
        const t0 = performance.now()
        await one(i)
        latencies.push(performance.now() - t0)
      }
    }),
  )
  return { name, count: MESSAGES, seconds: (performance.now() - started) / 1000, latencies }
}

/** A run timed as a whole: from its first request until its last message reached the sink. */
async function timed(name: string, count: number, run: () => Promise<void>): Promise<Figures> {
  const started = performance.now()
  await run()
  return { name, count, seconds: (performance.now() - started) / 1000, latencies: [] }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0
}

function report(all: Figures[]) {
  const base = all[0]
  const baseRate = base ? base.count / base.seconds : 1
  console.log(
    `\n${MESSAGES} messages per /send row, ${CONCURRENCY} requests at a time, TLS sink on loopback (STARTTLS, port 587);\n` +
      'queue and batch rows are timed from the first request until the last message reached the sink\n',
  )
  const header = ['', 'msg/s', 'vs baseline', 'p50 ms', 'p95 ms', 'p99 ms']
  const rows = all.map((f) => {
    const sorted = [...f.latencies].sort((a, b) => a - b)
    const rate = f.count / f.seconds
    const latency = (p: number) => (sorted.length ? percentile(sorted, p).toFixed(1) : '-')
    return [
      f.name,
      rate.toFixed(0),
      `${((rate / baseRate) * 100).toFixed(0)}%`,
      latency(50),
      latency(95),
      latency(99),
    ]
  })
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)))
  for (const row of [header, ...rows]) {
    console.log(
      row
        .map((cell, c) => (c === 0 ? cell.padEnd(widths[c] ?? 0) : cell.padStart(widths[c] ?? 0)))
        .join('  '),
    )
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
