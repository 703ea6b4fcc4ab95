import { type Bench, message, type Scenario } from '../support.ts'

const QUEUED = Number(process.env.BENCH_QUEUED ?? 2000)

/** POST /enqueue, `concurrency` at a time, timed from the first request until the last message arrived. */
export const enqueue: Scenario = {
  name: 'enqueue',
  async run(bench: Bench) {
    const figures = await bench.timed(`POST /enqueue ×${QUEUED} → delivered`, QUEUED, async () => {
      const arrived = bench.delivered(QUEUED)
      let next = 0
      await Promise.all(
        Array.from({ length: bench.concurrency }, async () => {
          while (next < QUEUED) await bench.post('/enqueue', message(next++, bench.from))
        }),
      )
      await arrived
    })
    return [{ ...figures, target: { ratio: 0.8 } }]
  },
}
