/**
 * An installation of many tenants for the scale rows: a service of its own on a new database
 * (the API alone, `mailroom start --no-worker`), its background workers as processes of their
 * own that a row starts and replaces (./worker-process.ts), and accounts each with one connection
 * to the bench's sink. Its PostgreSQL loads pg_stat_statements, so a row can count the statements
 * an email costs.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createAccount } from '../../src/accounts/accounts.ts'
import { loadConfig } from '../../src/config.ts'
import { addConnection } from '../../src/connections/connections.ts'
import { openEmbeddedDatabase } from '../../src/db/embedded.ts'
import { connect } from '../../src/db/sql.ts'
import { createKey } from '../../src/keys/keys.ts'
import { createLogger } from '../../src/log.ts'
import { openServices } from '../../src/open-services.ts'
import type { Services } from '../../src/services.ts'
import { startService } from '../service.ts'
import type { Bench } from '../support.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

export interface Connection {
  connectionId: number
  from: string
}

/** An account, its API key, and its connections (one unless made with more). */
export interface Tenant {
  accountId: number
  key: string
  connections: Connection[]
  /** POST to the API with the tenant's key; throws on anything but a 2xx. */
  post(apiPath: string, body: unknown): Promise<unknown>
}

export interface Installation {
  services: Services
  tenants: Tenant[]
  /** A new tenant with `connections` connections, each paced at `rate` a minute. */
  addTenant(label: string, connections: number, rate: number): Promise<Tenant>
  /** Stops the worker processes running and starts `count` scheduling queue runs as given. */
  workers(count: number, scheduling?: Scheduling): Promise<void>
  close(): Promise<void>
}

/** Connections are made this many at a time (each is tested against the sink first). */
const SETUP_PARALLEL = 8

/** A new installation under the bench's directory, with `accounts` tenants at full speed. */
export async function openInstallation(bench: Bench, name: string, accounts: number): Promise<Installation> {
  const dataDir = path.join(process.env.BENCH_DIR ?? '/tmp', name)
  const log = createLogger('warn')
  const database = await databaseWithStatementCounts(dataDir)
  const logFile = process.env.BENCH_SERVICE_LOG
    ? `${process.env.BENCH_SERVICE_LOG}-${name}`
    : path.join(dataDir, 'service.log')
  // The SMTP relay on ports of its own: the bench's main service holds the usual ones.
  const service = await startService(dataDir, logFile, {
    startArgs: ['--no-worker'],
    env: { MAILROOM_SMTP_PORT: '0', MAILROOM_SMTPS_PORT: '0' },
  })
  const services = await openServices(
    { ...loadConfig({}), dataDir, dataDirIsDefault: false, allowPrivateSmtpHosts: true },
    log,
  )
  let next = 0
  const addTenant = async (label: string, connections: number, rate: number): Promise<Tenant> => {
    const email = `${label}@example.com`
    const account = await createAccount(services.sql, { email, plan: 'pro' })
    const made: Connection[] = []
    for (let c = 0; c < connections; c++) {
      const from = connections === 1 ? email : `${label}-${c}@example.com`
      const connection = await addConnection(services, {
        accountId: account.id,
        ...bench.sink.login,
        from,
        rate,
      })
      made.push({ connectionId: connection.id, from })
    }
    const { key } = await createKey(services.sql, { accountId: account.id, name: 'bench' })
    return { accountId: account.id, key, connections: made, post: poster(service.url, key) }
  }
  const tenants: Tenant[] = new Array(accounts)
  await Promise.all(
    Array.from({ length: SETUP_PARALLEL }, async () => {
      for (let i = next++; i < accounts; i = next++) tenants[i] = await addTenant(`tenant${i}`, 1, 60_000)
    }),
  )
  let running: WorkerProcess[] = []
  return {
    services,
    tenants,
    addTenant,
    async workers(count, scheduling = {}) {
      await Promise.all(running.map((w) => w.stop()))
      running = await Promise.all(
        Array.from({ length: count }, () => startWorkerProcess(dataDir, scheduling)),
      )
    },
    async close() {
      await Promise.all(running.map((w) => w.stop()))
      await services.close()
      await service.stop()
      await database.stop()
    },
  }
}

/**
 * Starts the installation's PostgreSQL in this process, loading pg_stat_statements (a server
 * setting: the cluster is made, set, and started again); the service and its workers join it.
 */
async function databaseWithStatementCounts(dataDir: string) {
  const log = createLogger('warn')
  const first = await openEmbeddedDatabase(dataDir, log)
  const admin = connect(first.url, 1)
  await admin`alter system set shared_preload_libraries = 'pg_stat_statements'`
  await admin.end()
  await first.stop()
  const database = await openEmbeddedDatabase(dataDir, log)
  const db = connect(database.url, 1)
  await db`create extension if not exists pg_stat_statements`
  await db.end()
  return database
}

interface WorkerProcess {
  stop(): Promise<void>
}

/**
 * How a worker process schedules queue runs, when not as the service does: runs without slices
 * (a run keeps its slot while its connection has mail due), or a backlog's run at the same
 * priority as one asked for by new mail (see bench/worker-process.ts).
 */
export interface Scheduling {
  slice?: 'unbounded'
  backlogPriority?: number
}

async function startWorkerProcess(
  dataDir: string,
  { slice, backlogPriority }: Scheduling,
): Promise<WorkerProcess> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'bench/worker-process.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      MAILROOM_DATA_DIR: dataDir,
      MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS: '1',
      DATABASE_URL: '',
      MAILROOM_SECRET: '',
      ...(slice ? { BENCH_QUEUE_SLICE_MS: slice } : {}),
      ...(backlogPriority === undefined ? {} : { BENCH_BACKLOG_PRIORITY: String(backlogPriority) }),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve()
    })
    child.once('exit', (code) => reject(new Error(`a worker process exited before it ran (${code})`)))
  })
  return {
    async stop() {
      child.kill('SIGTERM')
      await exited
    },
  }
}

/** POSTs JSON to the service's API with `key`: the answer's body, or a rejection above 2xx. */
function poster(url: string, key: string) {
  return async (apiPath: string, body: unknown): Promise<unknown> => {
    const response = await fetch(`${url}/v1${apiPath}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    const text = await response.text()
    if (response.status >= 300) throw new Error(`POST ${apiPath} answered ${response.status}: ${text}`)
    return JSON.parse(text)
  }
}
