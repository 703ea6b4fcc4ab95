import { type Account, createAccount } from '../../src/accounts/accounts.ts'
import type { Config } from '../../src/config.ts'
import {
  type AddConnectionInput,
  addConnection,
  type ConnectionView,
} from '../../src/connections/connections.ts'
import { startHttpServer } from '../../src/http/server.ts'
import { createKey } from '../../src/keys/keys.ts'
import { createLogger } from '../../src/log.ts'
import { openServices, type ServiceOptions } from '../../src/open-services.ts'
import type { Services } from '../../src/services.ts'
import { createTestDatabase, type TestDatabase } from './database.ts'

export interface TestApp {
  services: Services
  db: TestDatabase
  /** Host root, e.g. http://127.0.0.1:40123 */
  url: string
  /** The API's `{base_url}`: `url` + `/v1` */
  baseUrl: string
  /** Raw HTTP against the API: path relative to `{base_url}`, bearer `key` when given. */
  request(
    path: string,
    init?: { method?: string; key?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<Response>
  close(): Promise<void>
}

export const TEST_SECRET = 'test-secret-that-is-long-enough-for-mailroom'

/** The configuration tests run the service with, on `databaseUrl`. */
export function testConfig(databaseUrl: string, settings: Partial<Config> = {}): Config {
  return {
    port: 0,
    host: '127.0.0.1',
    databaseUrl,
    dataDir: '/nonexistent',
    secret: TEST_SECRET,
    // Test SMTP sinks listen on loopback addresses.
    allowPrivateSmtpHosts: true,
    logLevel: process.env.TEST_LOG_LEVEL ?? 'silent',
    bodyLimitBytes: 10 * 1024 * 1024,
    ...settings,
  }
}

/** Another process's services on `databaseUrl`: its own pool, transports and clock. */
export function openTestServices(databaseUrl: string, options: ServiceOptions = {}): Promise<Services> {
  const config = testConfig(databaseUrl)
  return openServices(config, createLogger(config.logLevel), options)
}

/**
 * The real service (HTTP server, PostgreSQL, SMTP transports) on a database of its own.
 * `clockOffsetMs` runs mailroom_now() ahead of real time (quota windows, pacing, pauses).
 */
export async function startTestApp(
  settings: Partial<Config> = {},
  options: ServiceOptions = {},
): Promise<TestApp> {
  const db = await createTestDatabase()
  const config = testConfig(db.url, settings)
  const services = await openServices(config, createLogger(config.logLevel), options)
  const server = await startHttpServer(services, 0, '127.0.0.1')
  const baseUrl = `${server.url}/v1`
  return {
    services,
    db,
    url: server.url,
    baseUrl,
    request(path, init = {}) {
      const headers: Record<string, string> = { ...init.headers }
      if (init.key) headers.authorization = `Bearer ${init.key}`
      let body: string | undefined
      if (init.body !== undefined) {
        body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body)
        headers['content-type'] ??= 'application/json'
      }
      return fetch(`${baseUrl}${path}`, { method: init.method ?? (body ? 'POST' : 'GET'), headers, body })
    },
    async close() {
      await server.close()
      await services.close()
      await db.drop()
    },
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
  app: TestApp,
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
