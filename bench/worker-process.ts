/**
 * A background worker process as `mailroom start --worker-only` runs one, on the data dir
 * MAILROOM_DATA_DIR names, with the queue run's slice BENCH_QUEUE_SLICE_MS (the service's own by
 * default; `unbounded`: a run keeps its slot while its connection has mail due, to compare
 * with), and the priority of a backlog's run and of a batch's BENCH_BACKLOG_PRIORITY (the
 * service's own by default; 0: the same as a run asked for by new mail). Says `ready` on stdout
 * once it runs; drains and exits on SIGTERM.
 */
import { loadConfig } from '../src/config.ts'
import { BULK_PRIORITY } from '../src/db/jobs.ts'
import { createLogger } from '../src/log.ts'
import { openServices } from '../src/open-services.ts'
import { QUEUE_SLICE_MS, startWorker } from '../src/worker/worker.ts'

/** The longest timer Node keeps: longer than any run of the benchmark. */
const UNBOUNDED_MS = 2 ** 31 - 1

const sliceSetting = process.env.BENCH_QUEUE_SLICE_MS
const queueSliceMs = sliceSetting === 'unbounded' ? UNBOUNDED_MS : Number(sliceSetting ?? QUEUE_SLICE_MS)
const backlogPriority = Number(process.env.BENCH_BACKLOG_PRIORITY ?? BULK_PRIORITY)
const stop = new Promise((resolve) => process.once('SIGTERM', resolve))
const services = await openServices(loadConfig(), createLogger('warn'))
const worker = await startWorker(services, { queueSliceMs, backlogPriority })
process.stdout.write('ready\n')
await stop
await worker.stop()
await services.close()
process.exit(0)
