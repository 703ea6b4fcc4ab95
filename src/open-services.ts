import { clockAhead } from './clock.ts'
import type { Config } from './config.ts'
import { embeddedDataDir, openEmbeddedDatabase } from './db/embedded.ts'
import * as graphileInternals from './db/graphile-internals.ts'
import { migrateDatabase } from './db/migrate.ts'
import { connect } from './db/sql.ts'
import { openFastPath } from './fast-path/fast-path.ts'
import { createLogger, type Logger } from './log.ts'
import { Metrics } from './metrics.ts'
import type { Services } from './services.ts'
import * as nodemailerInternals from './smtp/nodemailer-internals.ts'
import { TransportPool } from './smtp/pool.ts'

/**
 * Enough for the API's requests and the worker's sends together: on its common path a queue run
 * holds one connection for a round of claims and one for a round of records, whatever its number
 * of lanes (a failed attempt is recorded in a transaction of its own), and up to eight
 * connections' queues run at once in a process.
 */
const POOL_SIZE = 32

export interface ServiceOptions {
  /** Moves the service's clock, mailroom_now() and `Services.clock` alike; tests only (see connect). */
  clockOffsetMs?: number
  /**
   * How long the SMTP sessions wait on a silent server before giving up, instead of 30 s; tests
   * only, so that a server answering later than that is waited out in less. It must stay above
   * the config's smtpIdleMs, or an idle session would be ended without QUIT.
   */
  smtpSocketTimeoutMs?: number
}

/**
 * The composition root: opens the database (embedded or not), migrates it, and the SMTP pools;
 * builds the state shared by every request and run of the process (the fast path's caches and
 * statement rounds), which no module keeps of its own.
 */
export async function openServices(
  config: Config,
  log: Logger = createLogger(config.logLevel, config.logFormat),
  options: ServiceOptions = {},
): Promise<Services> {
  // Before anything opens: another version of either package fails here, with one message.
  graphileInternals.checkPinnedVersion()
  nodemailerInternals.checkPinnedVersion()
  let databaseUrl: string
  let secret: string
  let stopDatabase = async () => {}
  // Where the service keeps its files: the embedded database's directory once it is known.
  let dataDir = config.dataDir
  if (config.databaseUrl) {
    // loadConfig refuses DATABASE_URL without a secret.
    if (!config.secret) throw new Error('MAILROOM_SECRET is required with DATABASE_URL')
    databaseUrl = config.databaseUrl
    secret = config.secret
  } else {
    const embeddedDir = await embeddedDataDir(config.dataDir, config.dataDirIsDefault)
    const { movedBecause } = embeddedDir
    dataDir = embeddedDir.dataDir
    if (movedBecause) {
      log.info(
        { dataDir },
        `the postgres user cannot enter ${movedBecause}: the embedded database lives in ${dataDir}`,
      )
    }
    const embedded = await openEmbeddedDatabase(dataDir, log)
    databaseUrl = embedded.url
    secret = config.secret ?? embedded.secret
    stopDatabase = embedded.stop
  }
  const sql = connect(databaseUrl, POOL_SIZE, options.clockOffsetMs)
  let applied: string[]
  try {
    applied = await migrateDatabase(sql, databaseUrl, log)
    if (applied.length) log.info({ applied }, 'database migrations applied')
  } catch (error) {
    await sql.end()
    await stopDatabase()
    throw error
  }
  const clock = clockAhead(options.clockOffsetMs)
  const transports = new TransportPool(secret, {
    allowPrivateHosts: config.allowPrivateSmtpHosts,
    ehloName: config.ehloName,
    idleMs: config.smtpIdleMs,
    socketTimeoutMs: options.smtpSocketTimeoutMs,
  })
  return {
    config: { ...config, dataDir },
    log,
    sql,
    databaseUrl,
    secret,
    transports,
    clock,
    fastPath: openFastPath(sql, clock),
    metrics: new Metrics(),
    appliedMigrations: applied,
    async close() {
      await transports.close()
      await sql.end({ timeout: 5 })
      await stopDatabase()
    },
  }
}
