import type { Config } from './config.ts'
import { openEmbeddedDatabase } from './db/embedded.ts'
import { migrate } from './db/migrate.ts'
import { connect, type Sql } from './db/sql.ts'
import { createLogger, type Logger } from './log.ts'
import { TransportPool } from './sending/transports.ts'

/** What every part of Mailroom (API, worker, operator command) runs on. */
export interface Services {
  config: Config
  log: Logger
  sql: Sql
  /** Connection string of the database `sql` talks to (the worker opens its own pool on it). */
  databaseUrl: string
  /** MAILROOM_SECRET, the key material for SMTP passwords at rest. */
  secret: string
  /** This process's SMTP transports, one pool per connection, shared by every send path. */
  transports: TransportPool
  /** Migrations this process applied on opening (empty when the schema was current). */
  appliedMigrations: string[]
  close(): Promise<void>
}

export const MIN_SECRET_LENGTH = 32

export async function openServices(
  config: Config,
  log: Logger = createLogger(config.logLevel),
): Promise<Services> {
  let databaseUrl: string
  let secret: string
  let stopDatabase = async () => {}
  if (config.databaseUrl) {
    if (!config.secret) {
      throw new Error(
        'MAILROOM_SECRET is required with DATABASE_URL: it encrypts SMTP passwords at rest. ' +
          `Set it to a random string of at least ${MIN_SECRET_LENGTH} characters and keep it.`,
      )
    }
    databaseUrl = config.databaseUrl
    secret = config.secret
  } else {
    const embedded = await openEmbeddedDatabase(config.dataDir, log)
    databaseUrl = embedded.url
    secret = config.secret ?? embedded.secret
    stopDatabase = embedded.stop
  }
  if (secret.length < MIN_SECRET_LENGTH) {
    throw new Error(`MAILROOM_SECRET must be at least ${MIN_SECRET_LENGTH} characters long`)
  }
  const sql = connect(databaseUrl)
  let applied: string[]
  try {
    applied = await migrate(sql)
    if (applied.length) log.info({ applied }, 'database migrations applied')
  } catch (error) {
    await sql.end()
    await stopDatabase()
    throw error
  }
  const transports = new TransportPool(secret, config.allowPrivateSmtpHosts)
  return {
    config,
    log,
    sql,
    databaseUrl,
    secret,
    transports,
    appliedMigrations: applied,
    async close() {
      await transports.close()
      await sql.end({ timeout: 5 })
      await stopDatabase()
    },
  }
}
