import { isDriverConnectionFault } from '../db/driver-faults.ts'
import type { Logger } from '../log.ts'
import { startRelay } from '../relay/relay.ts'
import type { Services } from '../services.ts'
import { startWebServer } from '../web.ts'
import { startWorker } from '../worker/worker.ts'

export interface StartOptions {
  api: boolean
  worker: boolean
}

/**
 * Resolves on the first SIGTERM or SIGINT. Installed before start-up begins, so that a signal
 * arriving while the database starts or migrates still ends in an orderly shutdown.
 */
export function stopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.once('SIGTERM', resolve)
    process.once('SIGINT', resolve)
  })
}

/**
 * Keeps a serving process alive through the driver faults PostgreSQL going away leaves behind
 * (see isDriverConnectionFault): requests meanwhile answer 500 and jobs wait, and both recover
 * when the database is back. Anything else still ends the process, as Node would.
 */
export function outliveDatabaseOutages(log: Logger) {
  const lost = (fault: unknown) =>
    log.warn({ err: fault }, 'database connection lost; the pool opens a new one for the next query')
  process.on('unhandledRejection', (reason) => {
    if (!isDriverConnectionFault(reason)) throw reason
    lost(reason)
  })
  process.on('uncaughtException', (error) => {
    if (isDriverConnectionFault(error)) return lost(error)
    log.fatal({ err: error }, 'uncaught exception: stopping')
    process.exit(1)
  })
}

/** `mailroom start`: serves until `stop` resolves, then drains and returns. */
export async function start(services: Services, options: StartOptions, stop: Promise<NodeJS.Signals>) {
  const { log, config } = services
  outliveDatabaseOutages(log)
  const server = options.api ? await startWebServer(services, config.port, config.host) : undefined
  if (server) {
    log.info(
      { url: server.url, reference: `${server.url}/reference`, dashboard: `${server.url}/dashboard` },
      'Mailroom API and dashboard listening',
    )
  }
  const relay = options.api ? await startRelay(services) : undefined
  if (relay?.selfSignedFile) {
    log.warn(
      { certificate: relay.selfSignedFile },
      'SMTP relay uses a self-signed certificate; set MAILROOM_SMTP_TLS_CERT and MAILROOM_SMTP_TLS_KEY for one clients can verify',
    )
  }
  if (relay && (relay.ports.smtp !== null || relay.ports.smtps !== null)) {
    log.info(
      { host: config.host, starttls: relay.ports.smtp, implicitTls: relay.ports.smtps },
      'Mailroom SMTP relay listening',
    )
  }
  const worker = options.worker ? await startWorker(services) : undefined
  if (worker) log.info('background worker running')
  const signal = await stop
  log.info({ signal }, 'shutting down: finishing requests in progress')
  await Promise.all([server?.close(), relay?.stop()])
  await worker?.stop()
  log.info('stopped')
}
