import { randomBytes } from 'node:crypto'
import { type Bench, type Figures, message, percentile, type Scenario } from '../support.ts'

/** Each phase's length; BENCH_ATTACHMENT_SECONDS shortens it when trying things out. */
const SECONDS = Number(process.env.BENCH_ATTACHMENT_SECONDS ?? 20)
/** Senders of the largest email, each one send after the other. */
const SENDERS = 4
const HEALTH_EVERY_MS = 20

/**
 * The `maximal attachments` row: /health probed alone, then while four clients each send, one
 * after the other, the largest email the API takes (10 MiB of files, a body of about 14 MB).
 * Reading, decoding and composing such a body must leave room for everyone else's requests.
 */
export const attachments: Scenario = {
  name: 'attachments',
  async run(bench: Bench) {
    const body = {
      ...message(0, bench.from),
      attachments: [{ filename: 'largest.bin', content: randomBytes(10 * 1024 * 1024).toString('base64') }],
    }
    const alone = await healthWhile(
      bench,
      () => new Promise((resolve) => setTimeout(resolve, SECONDS * 1000)),
    )
    let sent = 0
    const started = performance.now()
    const loaded = await healthWhile(bench, async () => {
      const until = Date.now() + SECONDS * 1000
      await Promise.all(
        Array.from({ length: SENDERS }, async () => {
          while (Date.now() < until) {
            await bench.post('/send', body)
            sent++
          }
        }),
      )
    })
    const figures: Figures = {
      name: `GET /health while ${SENDERS} maximal attachment sends run`,
      count: sent,
      seconds: (performance.now() - started) / 1000,
      latencies: loaded,
      paced: true,
      note: `/health alone: p99 ${percentile(alone, 99).toFixed(1)} ms, max ${(alone.at(-1) ?? 0).toFixed(1)}; with the sends: p99 ${percentile(loaded, 99).toFixed(1)} ms, max ${(loaded.at(-1) ?? 0).toFixed(1)}; ${sent} emails of 10 MiB sent`,
    }
    return [figures]
  },
}

/** /health's latencies, sorted, probed every HEALTH_EVERY_MS until `during` ends. */
async function healthWhile(bench: Bench, during: () => Promise<unknown>): Promise<number[]> {
  const latencies: number[] = []
  let running = true
  const probes = (async () => {
    while (running) {
      const start = performance.now()
      const response = await fetch(`${bench.url}/health`)
      await response.arrayBuffer()
      latencies.push(performance.now() - start)
      await new Promise((resolve) => setTimeout(resolve, HEALTH_EVERY_MS))
    }
  })()
  await during()
  running = false
  await probes
  return latencies.sort((a, b) => a - b)
}
