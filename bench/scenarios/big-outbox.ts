import { type Bench, message, type Scenario } from '../support.ts'
import { enqueueRun, QUEUED } from './enqueue.ts'
import { measureReads } from './reads.ts'
import { noteIndexScans } from './storage.ts'

/**
 * The outbox at BENCH_SCALE records (bench/fill): each read of its largest tenant, then /send
 * and /enqueue at full speed, compared with raw as on an empty database (BENCH_SCALE=0), where
 * the ratios are the ones the scale rows are held to (0.9 of them).
 */
export const bigOutbox: Scenario = {
  name: 'big-outbox',
  onlyWhenNamed: true,
  async run(bench: Bench) {
    await noteIndexScans(bench.services.sql)
    const reads = await measureReads(bench)
    const send = await bench.measure('POST /send', (i) => bench.post('/send', message(i, bench.from)))
    const queued = await enqueueRun(bench, `POST /enqueue ×${QUEUED} → delivered`)
    return [
      ...reads,
      { ...send, target: { ratio: 0.7, p50WithinMs: 5 }, fullSpeed: true },
      { ...queued, target: { ratio: 0.8 }, fullSpeed: true },
    ]
  },
}
