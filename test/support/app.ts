/**
 * The test app: the real service (PostgreSQL, SMTP transports, the Hono app) on a database of
 * its own. Requests go through the app in-process, with no socket, unless a test asks it to
 * listen (clients over HTTP: the SDK, other processes, concurrency on real connections).
 *
 * `useTestApp()` is the one fixture of a test file: it starts the app before the file's tests
 * and closes, in order, the workers, the app and the SMTP sinks it made afterwards.
 */
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest'
import { type Account, createAccount } from '../../src/accounts/accounts.ts'
import type { Config, LogLevel, RelayConfig } from '../../src/config.ts'
import {
  type AddConnectionInput,
  addConnection,
  type ConnectionView,
} from '../../src/connections/connections.ts'
import { createKey } from '../../src/keys/keys.ts'
import { createLogger, type Logger } from '../../src/log.ts'
import type { RunningServer } from '../../src/net/http-server.ts'
import { openServices, type ServiceOptions } from '../../src/open-services.ts'
import type { Services } from '../../src/services.ts'
import { createWebApp, startWebServer } from '../../src/web.ts'
import type { RunningWorker, WorkerOptions } from '../../src/worker/worker.ts'
import { createTestDatabase, type TestDatabase } from './database.ts'
import { type SmtpSink, type SmtpSinkOptions, startSmtpSink } from './smtp-sink.ts'

export interface RequestInit {
  method?: string
  /** Sent as `Authorization: Bearer <key>`. */
  key?: string
  /**
   * JSON-encoded unless a string (then sent as is); sets `Content-Type: application/json`. A
   * FormData or URLSearchParams goes as a browser's form.
   */
  body?: unknown
  headers?: Record<string, string>
}

export interface TestApp {
  services: Services
  db: TestDatabase
  /** A request to the API: `path` relative to `{base_url}` (e.g. `/send`). */
  request(path: string, init?: RequestInit): Promise<Response>
  /** A request to any path from the host root (e.g. `/health`, a `status_url`). */
  requestRoot(path: string, init?: RequestInit): Promise<Response>
  /** Host root, e.g. http://127.0.0.1:40123 (only when listening). */
  url: string
  /** The API's `{base_url}`: `url` + `/v1` (only when listening). */
  baseUrl: string
  /** SMTP sinks made through `sink()`; closed after the app (its pooled sessions hold them open). */
  readonly sinks: SmtpSink[]
  /** An SMTP sink closed with the app. */
  sink(options: SmtpSinkOptions): Promise<SmtpSink>
  /** A worker in this process (the tests' short retry delays), stopped before the app closes. */
  worker(options?: Partial<WorkerOptions>): Promise<RunningWorker>
  /** Stops the workers started so far. */
  stopWorkers(): Promise<void>
  /** Closes, in order, the workers, the app and the sinks. */
  close(): Promise<void>
}

export interface TestAppOptions extends ServiceOptions {
  /** Serve on a real socket (for `url` and `baseUrl`). */
  listen?: boolean
  /** The service's logger (tests that read the logs); by default silent. */
  log?: Logger
}

export const TEST_SECRET = 'test-secret-that-is-long-enough-for-mailroom'

/** The relay's settings at their defaults, on the given ports. */
export function testRelay(ports: Pick<RelayConfig, 'port' | 'securePort'>): RelayConfig {
  return {
    ...ports,
    tlsCertFile: undefined,
    tlsKeyFile: undefined,
    maxBytes: 25 * 1024 * 1024,
    sessionsPerAddress: 20,
    timeoutSeconds: 60,
    messagesPerSession: 100,
  }
}

/** The configuration tests run the service with, on `databaseUrl`. */
export function testConfig(databaseUrl: string, settings: Partial<Config> = {}): Config {
  return {
    port: 0,
    host: '127.0.0.1',
    databaseUrl,
    dataDir: '/nonexistent',
    dataDirIsDefault: false,
    secret: TEST_SECRET,
    // Test SMTP sinks listen on loopback addresses.
    allowPrivateSmtpHosts: true,
    allowPrivateWebhookUrls: true,
    logLevel: (process.env.TEST_LOG_LEVEL as LogLevel | undefined) ?? 'silent',
    logFormat: 'json',
    bodyLimitBytes: 10 * 1024 * 1024,
    // A test that shrinks the service's body limit shrinks the mail operations' with it.
    mailBodyLimitBytes: settings.bodyLimitBytes ?? 15 * 1024 * 1024,
    jsonMaxValues: 200_000,
    bodyTimeoutSeconds: 20,
    bodyMinBytesPerSecond: 256 * 1024,
    publicConnectionsPerAddress: 64,
    metricsToken: undefined,
    ehloName: 'mailroom.test',
    queueLifetimeHours: 72,
    smtpIdleMs: 20_000,
    // The relay is started by the tests that use it (test/relay/), each on ports of its own.
    relay: testRelay({ port: 0, securePort: 0 }),
    publicUrl: 'http://localhost',
    trustProxy: false,
    ...settings,
  }
}

/** Another process's services on `databaseUrl`: its own pool, transports and clock. */
export function openTestServices(databaseUrl: string, options: ServiceOptions = {}): Promise<Services> {
  const config = testConfig(databaseUrl)
  return openServices(config, createLogger(config.logLevel), options)
}

/** What `fetch` or the in-process app takes for `init`. */
export function requestOf(init: RequestInit): globalThis.RequestInit {
  const headers: Record<string, string> = { ...init.headers }
  if (init.key) headers.authorization = `Bearer ${init.key}`
  let body: BodyInit | undefined
  if (init.body instanceof FormData || init.body instanceof URLSearchParams) {
    // A browser's form: fetch sets the content type (multipart boundary included).
    body = init.body
  } else if (init.body !== undefined) {
    body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body)
    headers['content-type'] ??= 'application/json'
  }
  return { method: init.method ?? (body ? 'POST' : 'GET'), headers, body }
}

/**
 * The real service on a database of its own. `clockOffsetMs` runs mailroom_now() ahead of real
 * time (quota windows, pacing, pauses).
 */
export async function startTestApp(
  settings: Partial<Config> = {},
  options: TestAppOptions = {},
): Promise<TestApp> {
  const db = await createTestDatabase()
  const config = testConfig(db.url, settings)
  const services = await openServices(config, options.log ?? createLogger(config.logLevel), options)
  const server: RunningServer | undefined = options.listen
    ? await startWebServer(services, 0, '127.0.0.1')
    : undefined
  const app = createWebApp(services)
  const listening = (what: string) => {
    if (!server) throw new Error(`${what} needs a listening test app: useTestApp({}, { listen: true })`)
    return server.url
  }
  const requestRoot = (path: string, init: RequestInit = {}) =>
    server
      ? fetch(`${server.url}${path}`, requestOf(init))
      : Promise.resolve(app.request(path, requestOf(init)))
  const sinks: SmtpSink[] = []
  const workers: RunningWorker[] = []
  const stopWorkers = async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()))
  }
  return {
    services,
    db,
    request: (path, init) => requestRoot(`/v1${path}`, init),
    requestRoot,
    get url() {
      return listening('url')
    },
    get baseUrl() {
      return `${listening('baseUrl')}/v1`
    },
    sinks,
    async sink(sinkOptions) {
      const sink = await startSmtpSink(sinkOptions)
      sinks.push(sink)
      return sink
    },
    async worker(workerOptions = {}) {
      // Imported here: most files need no worker, and the worker's module graph is large.
      const { startTestWorker } = await import('./queue.ts')
      const worker = await startTestWorker(services, workerOptions)
      workers.push(worker)
      return worker
    },
    stopWorkers,
    async close() {
      await stopWorkers()
      await server?.close()
      await services.close()
      await db.drop()
      await Promise.all(sinks.splice(0).map((sink) => sink.close()))
    },
  }
}

export interface FixtureOptions extends TestAppOptions {
  /** A fresh app for each test rather than one for the file. */
  each?: boolean
}

/**
 * Registers the file's (or describe block's) app: started before its tests, closed after them.
 * The object it returns stands for the app from then on.
 */
export function useTestApp(settings: Partial<Config> = {}, options: FixtureOptions = {}): TestApp {
  let current: TestApp | undefined
  const started = () => {
    if (!current) throw new Error('the test app is used before it started (outside a test or hook?)')
    return current
  }
  const [before, after] = options.each ? [beforeEach, afterEach] : [beforeAll, afterAll]
  before(async () => {
    current = await startTestApp(settings, options)
  })
  after(async () => {
    await current?.close()
    current = undefined
  })
  return {
    get services() {
      return started().services
    },
    get db() {
      return started().db
    },
    get url() {
      return started().url
    },
    get baseUrl() {
      return started().baseUrl
    },
    get sinks() {
      return started().sinks
    },
    request: (path, init) => started().request(path, init),
    requestRoot: (path, init) => started().requestRoot(path, init),
    sink: (sinkOptions) => started().sink(sinkOptions),
    worker: (workerOptions) => started().worker(workerOptions),
    stopWorkers: () => started().stopWorkers(),
    close: () => started().close(),
  }
}

export interface SeededAccount {
  account: Account
  connection?: ConnectionView
  key: string
  keyId: number
}

let seq = 0

/**
 * An account as an operator would set it up (same domain code as the `mailroom` command):
 * optionally a connection to an SMTP server, and an API key.
 */
export async function seedAccount(
  app: Pick<TestApp, 'services'>,
  options: {
    plan?: 'free' | 'pro'
    connection?: Omit<AddConnectionInput, 'accountId'>
    keyConnection?: 'scoped'
  } = {},
): Promise<SeededAccount> {
  const account = await createAccount(app.services.sql, {
    email: `owner${++seq}-${process.pid}@example.com`,
    plan: options.plan ?? 'free',
  })
  // Sinks log in with a plain user name, so the sending address needs giving unless the test chose one.
  const connection = options.connection
    ? await addConnection(app.services, {
        accountId: account.id,
        from: `sender${seq}-${process.pid}@example.com`,
        ...options.connection,
      })
    : undefined
  const key = await createKey(app.services.sql, {
    accountId: account.id,
    name: 'test key',
    ...(options.keyConnection && connection ? { connectionId: connection.id } : {}),
  })
  return { account, connection, key: key.key, keyId: key.id }
}
