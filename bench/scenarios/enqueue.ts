import { setTimeout as sleep } from 'node:timers/promises'
import { type Bench, type Figures, message, type Scenario, WARM_UP } from '../support.ts'

export const QUEUED = Number(process.env.BENCH_QUEUED ?? 2000)
/** Messages of the one-at-a-time row, and the pause before each (the run before has ended). */
const TRICKLE = 50
const TRICKLE_PAUSE_MS = 200

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

/**
 * Mail trickling in: one /enqueue at a time, each after a pause in which the connection's run
 * ended, timed from the request until the message reached the sink. What a queued password reset
 * waits for.
 */
async function trickle(bench: Bench): Promise<Figures> {
  const latencies: number[] = []
  const started = performance.now()
  for (let i = 0; i < TRICKLE; i++) {
    await sleep(TRICKLE_PAUSE_MS)
    const arrived = bench.delivered(1)
    const t0 = performance.now()
    await bench.post('/enqueue', message(2_000_000 + i, bench.from))
    await arrived
    latencies.push(performance.now() - t0)
  }
  const seconds = (performance.now() - started) / 1000
  return { name: 'POST /enqueue one at a time → delivered', count: TRICKLE, seconds, latencies, paced: true }
}

export const enqueue: Scenario = {
  name: 'enqueue',
  async run(bench: Bench) {
    const figures = await enqueueRun(bench, `POST /enqueue ×${QUEUED} → delivered`)
    return [{ ...figures, target: { ratio: 0.8 }, fullSpeed: true }, await trickle(bench)]
  },
}
