import { run, Logger as WorkerLogger } from 'graphile-worker'
import type { Services } from '../services.ts'
import { purgeExpired } from './purge-expired.ts'

export interface RunningWorker {
  /** Finishes the jobs in hand, then resolves. */
  stop(): Promise<void>
}

/** Background jobs, kept by graphile-worker in the same PostgreSQL. */
export async function startWorker(services: Services): Promise<RunningWorker> {
  const { log } = services
  const runner = await run({
    connectionString: services.databaseUrl,
    concurrency: 2,
    noHandleSignals: true,
    logger: new WorkerLogger((scope) => (level, message, meta) => {
      const method = level === 'error' ? 'error' : level === 'warning' ? 'warn' : 'debug'
      log[method]({ component: 'worker', ...scope, ...meta }, message)
    }),
    taskList: {
      purge_expired: async () => {
        const purged = await purgeExpired(services.sql)
        log.info({ purged }, 'expired outbox records and counters purged')
      },
    },
    // Hourly, so a plan's retention is kept to the hour; `fill` catches up a missed run once.
    crontab: '17 * * * * purge_expired ?fill=1h',
  })
  return { stop: () => runner.stop() }
}
