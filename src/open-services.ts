import type { Config } from './config.ts'
import { openEmbeddedDatabase } from './db/embedded.ts'
import { migrateJobSchema } from './db/jobs.ts'
import { migrate } from './db/migrate.ts'
import { connect } from './db/sql.ts'
import { createLogger, type Logger } from './log.ts'
import type { Services } from './services.ts'
import { TransportPool } from './smtp/pool.ts'

const MIN_SECRET_LENGTH = 32
/** Enough for the API's requests and the worker's concurrent sends together. */
const POOL_SIZE = 20

export interface ServiceOptions {
  /** Moves the clock sending limits are measured in; tests only (see connect). */
  clockOffsetMs?: number
}

/** The composition root: opens the database (embedded or not), migrates it, and the SMTP pools. */
export async function openServices(
  config: Config,
  log: Logger = createLogger(config.logLevel),
  options: ServiceOptions = {},
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
  const sql = connect(databaseUrl, POOL_SIZE, options.clockOffsetMs)
  let applied: string[]
  try {
    applied = await migrate(sql)
    // The API adds jobs in the same transactions as the mail they send, so their schema is needed
    // wherever Mailroom runs, not only where a worker does.
    await migrateJobSchema(databaseUrl, log)
    if (applied.length) log.info({ applied }, 'database migrations applied')
  } catch (error) {
    await sql.end()
    await stopDatabase()
    throw error
  }
  const transports = new TransportPool(secret, {
    allowPrivateHosts: config.allowPrivateSmtpHosts,
    ehloName: config.ehloName,
  })
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
