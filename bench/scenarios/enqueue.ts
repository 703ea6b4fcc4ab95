import { type Bench, type Figures, message, type Scenario, WARM_UP } from '../support.ts'

export const QUEUED = Number(process.env.BENCH_QUEUED ?? 2000)

/**
 * POST /enqueue ×QUEUED, `concurrency` at a time, timed from the first request until the last
 * message arrived; after WARM_UP of them queued and delivered, as the request rows warm up.
 */
export function enqueueRun(bench: Bench, name: string): Promise<Figures> {
  return bench.timed(
    name,
    QUEUED,
    () => enqueueAll(bench, QUEUED, 0),
    () => enqueueAll(bench, WARM_UP, 1_000_000),
  )
}

async function enqueueAll(bench: Bench, count: number, first: number): Promise<void> {
  const arrived = bench.delivered(count)
  let next = 0
  await Promise.all(
    Array.from({ length: bench.concurrency }, async () => {
      while (next < count) await bench.post('/enqueue', message(first + next++, bench.from))
    }),
  )
  await arrived
}

export const enqueue: Scenario = {
  name: 'enqueue',
  async run(bench: Bench) {
    const figures = await enqueueRun(bench, `POST /enqueue ×${QUEUED} → delivered`)
    return [{ ...figures, target: { ratio: 0.8 }, fullSpeed: true }]
  },
}
