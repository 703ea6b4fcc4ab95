import { randomBytes } from 'node:crypto'
import { appendFile, readFile, rm } from 'node:fs/promises'
import path from 'node:path'
import type { TestProject } from 'vitest/node'
import { migrateDatabase } from '../../src/db/migrate.ts'
import { openTempDir, startPostgresServer } from '../../src/db/postgres-server.ts'
import { connect } from '../../src/db/sql.ts'
import { createLogger } from '../../src/log.ts'
import { freePort } from '../../src/net/free-port.ts'
import { createTlsMaterial, type TlsMaterial } from './tls.ts'

declare module 'vitest' {
  export interface ProvidedContext {
    database: {
      /** URL of the server's maintenance database (`postgres`); test databases are made from it. */
      serverUrl: string
      /** Migrated database every test database is copied from. */
      template: string
    }
    tls: TlsMaterial
  }
}

const TEMPLATE = 'mailroom_template'

/**
 * Runs once in the main vitest process, before any worker is forked: one PostgreSQL for the
 * whole run with a migrated template database, and the TLS material the SMTP sinks use.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // As root, PostgreSQL runs as the `postgres` user, which has to reach its data dir in here.
  const dir = await openTempDir('mailroom-test-')

  const tls = await createTlsMaterial(path.join(dir, 'tls'))
  await trustCaInWorkers(tls.caPath)
  relayOnFreePorts()
  project.provide('tls', tls)

  let server: { serverUrl: string; stop(): Promise<void> }
  try {
    server = process.env.DATABASE_URL
      ? { serverUrl: maintenanceUrl(process.env.DATABASE_URL), stop: async () => {} }
      : await startEmbeddedPostgres(path.join(dir, 'pg'))
    await createTemplate(server.serverUrl)
  } catch (error) {
    await rm(dir, { recursive: true, force: true })
    throw error
  }
  project.provide('database', { serverUrl: server.serverUrl, template: TEMPLATE })

  return async () => {
    await server.stop()
    await rm(dir, { recursive: true, force: true })
  }
}

/**
 * Node reads NODE_EXTRA_CA_CERTS only when a process starts, so setting it here does nothing
 * for this process but is inherited by every worker vitest forks after global setup. A CA file
 * the caller already trusted is kept in the bundle.
 */
async function trustCaInWorkers(caPath: string): Promise<void> {
  const previous = process.env.NODE_EXTRA_CA_CERTS
  if (previous && previous !== caPath) {
    const pem = await readFile(previous, 'utf8').catch(() => '')
    if (pem) await appendFile(caPath, `\n${pem}`)
  }
  process.env.NODE_EXTRA_CA_CERTS = caPath
}

/**
 * Every `mailroom start` a test runs serves the SMTP relay; inherited by the workers and the
 * processes they start, port 0 lets each take free ports instead of all colliding on the
 * defaults. A test that sets the ports itself still wins.
 */
function relayOnFreePorts(): void {
  process.env.MAILROOM_SMTP_PORT ??= '0'
  process.env.MAILROOM_SMTPS_PORT ??= '0'
}

function maintenanceUrl(databaseUrl: string): string {
  const url = new URL(databaseUrl)
  url.pathname = '/postgres'
  return url.toString()
}

async function startEmbeddedPostgres(
  clusterDir: string,
): Promise<{ serverUrl: string; stop(): Promise<void> }> {
  const server = await startPostgresServer({
    clusterDir,
    port: await freePort(),
    password: randomBytes(18).toString('base64url'),
    log: createLogger('silent'),
    disposable: true,
  })
  return { serverUrl: server.url, stop: server.stop }
}

async function createTemplate(serverUrl: string): Promise<void> {
  const admin = connect(serverUrl, 1)
  try {
    // A leftover template on an external server may predate the current migrations.
    await admin.unsafe(`drop database if exists ${TEMPLATE} with (force)`)
    await admin.unsafe(`create database ${TEMPLATE}`)
  } finally {
    await admin.end()
  }
  const template = new URL(serverUrl)
  template.pathname = `/${TEMPLATE}`
  const sql = connect(template.toString(), 1)
  try {
    await migrateDatabase(sql, template.toString(), createLogger('silent'))
  } finally {
    // CREATE DATABASE ... TEMPLATE refuses while anyone is connected to the template.
    await sql.end()
  }
}
