import { type Bench, type Figures, message, type Scenario } from '../support.ts'

export const QUEUED = Number(process.env.BENCH_QUEUED ?? 2000)

/** POST /enqueue ×QUEUED, `concurrency` at a time, timed from the first request until the last message arrived. */
export function enqueueRun(bench: Bench, name: string): Promise<Figures> {
  return bench.timed(name, QUEUED, async () => {
    const arrived = bench.delivered(QUEUED)
    let next = 0
    await Promise.all(
      Array.from({ length: bench.concurrency }, async () => {
        while (next < QUEUED) await bench.post('/enqueue', message(next++, bench.from))
      }),
    )
    await arrived
  })
}

export const enqueue: Scenario = {
  name: 'enqueue',
  async run(bench: Bench) {
    const figures = await enqueueRun(bench, `POST /enqueue ×${QUEUED} → delivered`)
    return [{ ...figures, target: { ratio: 0.8 }, fullSpeed: true }]
  },
}
