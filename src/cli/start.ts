import { startHttpServer } from '../http/server.ts'
import type { Services } from '../services.ts'
import { startWorker } from '../worker/worker.ts'
import { parseCommand, UsageError } from './args.ts'

/** `mailroom start`: serves until SIGTERM or SIGINT, then drains and returns. */
export async function start(services: Services, argv: string[]): Promise<void> {
  const { values } = parseCommand(argv, {
    'no-worker': { type: 'boolean' },
    'worker-only': { type: 'boolean' },
  })
  if (values['no-worker'] && values['worker-only'])
    throw new UsageError('give --no-worker or --worker-only, not both')
  const { log, config } = services
  const server = values['worker-only'] ? undefined : await startHttpServer(services, config.port, config.host)
  if (server) log.info({ url: server.url, reference: `${server.url}/reference` }, 'Mailroom API listening')
  const worker = values['no-worker'] ? undefined : await startWorker(services)
  if (worker) log.info('background worker running')
  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      log.info({ signal }, 'shutting down: finishing requests in progress')
      resolve()
    }
    process.once('SIGTERM', stop)
    process.once('SIGINT', stop)
  })
  await server?.close()
  await worker?.stop()
  log.info('stopped')
}
