/**
 * PostgreSQL stopped and started again under load. While it is gone the API
 * answers 500 INTERNAL_ERROR (the catalog's body, no internals) and `/health` fails; once it is
 * back the service and its worker recover by themselves, with no restart of Mailroom, and every
 * email that was accepted (a 200 from /send or /enqueue) reaches the SMTP server, none twice.
 * The test runs its own PostgreSQL (the suite's shared one cannot be stopped) and the real
 * `mailroom start` (a process that dies of a lost connection would fail it).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type PostgresServer, startPostgresServer } from '../../src/db/postgres-server.ts'
import { createLogger } from '../../src/log.ts'
import { freePort } from '../../src/net/free-port.ts'
import { openTestServices, seedAccount, TEST_SECRET } from '../support/app.ts'
import { ROOT } from '../support/queue.ts'
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.ts'

const PASSWORD = 'restart-test-password'
let dir: string
let port: number
let database: PostgresServer
let service: ChildProcess
let serviceUrl: string
let serviceLog = ''
let sink: SmtpSink
let key: string

function startDatabase(): Promise<PostgresServer> {
  return startPostgresServer({
    clusterDir: path.join(dir, 'cluster'),
    port,
    password: PASSWORD,
    log: createLogger('silent'),
  })
}

/** `mailroom start` as an operator runs it, on this test's PostgreSQL: server and worker in one process. */
async function startService(): Promise<void> {
  const httpPort = await freePort()
  serviceUrl = `http://127.0.0.1:${httpPort}`
  service = spawn(process.execPath, [path.join(ROOT, 'bin/mailroom.js'), 'start'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: database.url,
      MAILROOM_SECRET: TEST_SECRET,
      MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS: 'true',
      PORT: String(httpPort),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const keep = (chunk: Buffer) => {
    serviceLog = (serviceLog + chunk.toString()).slice(-20_000)
  }
  service.stdout?.on('data', keep)
  service.stderr?.on('data', keep)
  for (;;) {
    if (service.exitCode !== null) throw new Error(`mailroom start exited:\n${serviceLog}`)
    const health = await fetch(`${serviceUrl}/health`).catch(() => undefined)
    if (health?.status === 200) return
    await sleep(200)
  }
}

beforeAll(async () => {
  // Open to the `postgres` user the server runs as when the tests run as root.
  dir = await mkdtemp(path.join(os.tmpdir(), 'mailroom-restart-'))
  await chmod(dir, 0o755)
  port = await freePort()
  database = await startDatabase()
  sink = await startSmtpSink({ port: 2525 })
  await startService()
  // Set up as the operator command would, from another process's pool, closed before the outage.
  const services = await openTestServices(database.url)
  try {
    const seeded = await seedAccount(
      { services },
      { plan: 'pro', connection: { ...sink.login, from: 'restart@example.com', rate: 60_000 } },
    )
    key = seeded.key
  } finally {
    await services.close()
  }
}, 120_000)

afterAll(async () => {
  if (service && service.exitCode === null) {
    service.kill('SIGTERM')
    await new Promise((resolve) => service.once('exit', resolve))
  }
  await database?.stop()
  await sink?.close()
  await rm(dir, { recursive: true, force: true })
})

interface Outcome {
  subject: string
  status: number
  body: Record<string, unknown>
}

let seq = 0

/** One /send or /enqueue with a subject of its own; a refused connection counts as status 0. */
async function request(kind: 'send' | 'enqueue'): Promise<Outcome> {
  const subject = `${kind} ${++seq}`
  try {
    const response = await fetch(`${serviceUrl}/v1/${kind}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ to: 'reader@example.com', subject, text_body: 'Hello' }),
    })
    return { subject, status: response.status, body: (await response.json()) as Record<string, unknown> }
  } catch {
    return { subject, status: 0, body: {} }
  }
}

/** Four clients sending and queueing until `stop` says so. */
function load(stop: () => boolean): Promise<Outcome[]> {
  const outcomes: Outcome[] = []
  const client = async (kind: 'send' | 'enqueue') => {
    while (!stop()) outcomes.push(await request(kind))
  }
  return Promise.all([client('send'), client('send'), client('enqueue'), client('enqueue')]).then(
    () => outcomes,
  )
}

describe('PostgreSQL stopped and started again under load', () => {
  it('answers 500 without internals while it is gone, recovers by itself, and loses no accepted email', {
    timeout: 240_000,
  }, async () => {
    let phase: 'before' | 'down' | 'after' | 'done' = 'before'
    const running = load(() => phase === 'done')
    await sleep(1500)

    await database.stop()
    phase = 'down'
    const whileDown = await Promise.all([request('send'), request('enqueue')])
    const health = await fetch(`${serviceUrl}/health`).catch(() => undefined)
    if (!health)
      throw new Error(`mailroom start stopped answering (exit ${service.exitCode}):\n${serviceLog}`)
    expect(health.status).toBeGreaterThanOrEqual(500)
    await sleep(1500)

    database = await startDatabase()
    phase = 'after'
    // Recovered by itself: sends succeed again without restarting anything.
    let recovered: Outcome | undefined
    for (let i = 0; i < 300 && recovered?.status !== 200; i++) {
      recovered = await request('send')
      if (recovered.status !== 200) await sleep(100)
    }
    expect(service.exitCode, serviceLog).toBeNull()
    expect(recovered?.status, serviceLog).toBe(200)
    expect((await fetch(`${serviceUrl}/health`)).status, serviceLog).toBe(200)
    await sleep(1500)
    phase = 'done'
    const outcomes = [...(await running), ...whileDown, recovered as Outcome]

    // While it was gone: the catalog's 500 (or 503), in its shape, naming nothing inside.
    for (const outcome of [...whileDown, ...outcomes.filter((o) => o.status >= 500)]) {
      expect([500, 503]).toContain(outcome.status)
      expect(outcome.body).toEqual({
        code: outcome.status === 500 ? 'INTERNAL_ERROR' : expect.any(String),
        message: expect.any(String),
      })
      expect(String(outcome.body.message)).not.toMatch(
        /ECONNREFUSED|postgres|127\.0\.0\.1|:\d{4,5}\b|at .+:\d+/i,
      )
    }
    expect(whileDown.every((o) => o.status >= 500)).toBe(true)
    // Nothing else went wrong: every answer was a success or the outage's 500.
    expect(outcomes.every((o) => o.status === 200 || o.status >= 500)).toBe(true)

    // Every accepted email arrives, once. /send's 200 with success: true was delivered already.
    const accepted = outcomes.filter((o) => o.status === 200 && o.body.success !== false)
    expect(accepted.length).toBeGreaterThan(20)
    const subjects = new Set(accepted.map((o) => o.subject))
    const deadline = Date.now() + 120_000
    const arrived = () => sink.messages.map((m) => m.headers.get('subject') ?? '')
    while ([...subjects].some((s) => !arrived().includes(s)) && Date.now() < deadline) await sleep(200)
    const counts = new Map<string, number>()
    for (const subject of arrived()) counts.set(subject, (counts.get(subject) ?? 0) + 1)
    expect(
      [...subjects].filter((s) => !counts.has(s)),
      serviceLog,
    ).toEqual([])
    expect(
      [...counts].filter(([, n]) => n > 1),
      serviceLog,
    ).toEqual([])
    // The same process all along.
    expect(service.exitCode, serviceLog).toBeNull()
  })
})
