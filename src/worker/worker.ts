import { run, runMigrations, Logger as WorkerLogger } from 'graphile-worker'
import pg from 'pg'
import type { Services } from '../services.ts'
import { purgeExpired } from './purge-expired.ts'

export interface RunningWorker {
  /** Finishes the jobs in hand, closes the worker's connections, then resolves. */
  stop(): Promise<void>
}

/** Installs or upgrades graphile-worker's own schema, as `mailroom migrate` promises. */
export async function migrateWorkerSchema(services: Services): Promise<void> {
  await runMigrations({ connectionString: services.databaseUrl, logger: workerLogger(services) })
}

function workerLogger({ log }: Services): WorkerLogger {
  return new WorkerLogger((scope) => (level, message, meta) => {
    const method = level === 'error' ? 'error' : level === 'warning' ? 'warn' : 'debug'
    log[method]({ component: 'worker', ...scope, ...meta }, message)
  })
}

/** Background jobs, kept by graphile-worker in the same PostgreSQL. */
export async function startWorker(services: Services): Promise<RunningWorker> {
  const { log } = services
  // Our own pool, so that its shutdown can be awaited (graphile-worker does not await the end
  // of a pool it made) and a connection ended by the server during shutdown is only logged.
  const pool = new pg.Pool({ connectionString: services.databaseUrl, max: 4 })
  pool.on('error', (error) => log.warn({ component: 'worker', err: error.message }, 'worker connection lost'))
  const runner = await run({
    pgPool: pool,
    concurrency: 2,
    noHandleSignals: true,
    logger: workerLogger(services),
    taskList: {
      purge_expired: async () => {
        const purged = await purgeExpired(services.sql)
        log.info({ purged }, 'expired outbox records and counters purged')
      },
    },
    // Hourly, so a plan's retention is kept to the hour; `fill` catches up a missed run once.
    crontab: '17 * * * * purge_expired ?fill=1h',
  })
  return {
    async stop() {
      await runner.stop()
      await pool.end()
    },
  }
}
