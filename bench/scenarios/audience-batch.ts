import { setTimeout as sleep } from 'node:timers/promises'
import { type Bench, percentile, type Scenario } from '../support.ts'

/** The audience's size: 100,000 unless BENCH_AUDIENCE says (a loaded machine may not deliver that many in time). */
const MEMBERS = Number(process.env.BENCH_AUDIENCE ?? 100_000)
const HEALTH_EVERY_MS = 50

/** The targets for a batch to a large audience (docs/performance.md). */
const TARGETS = { creationSeconds: 2, healthP99Ms: 50, peakRssMiB: 250 }

/**
 * One batch to a 100,000-member audience (BENCH_AUDIENCE; seeded in SQL: an import is its own row), from its
 * creation until the last message reached the sink, with `/health` asked every 50 ms the whole
 * time (each request on its own timer, so a stalled service shows as the full wait of every
 * request that arrived meanwhile).
 */
export const audienceBatch: Scenario = {
  name: 'audience-batch',
  async run(bench: Bench) {
    const { audience } = (await bench.post('/audiences', { name: 'Bench 100k' })) as {
      audience: { id: number }
    }
    await bench.services.sql`
      insert into audience_members (audience_id, email, payload)
      select ${audience.id}, 'member' || i || '@example.com', jsonb_build_object('first_name', 'M' || i)
      from generate_series(1, ${MEMBERS}::int) as i`
    const template = {
      subject: 'Bench {{first_name}}',
      text_body: 'Hello {{first_name}}, from the bench',
      html_body: '<p>Hello {{first_name}}, from the bench</p>',
    }
    const health = sampleHealth(bench.url)
    let creationSeconds = 0
    const figures = await bench.timed(`1 batch → audience ×${MEMBERS} → delivered`, MEMBERS, async () => {
      const arrived = bench.delivered(MEMBERS)
      const started = performance.now()
      await bench.post('/send/batch', { from: bench.from, template, audience_id: audience.id })
      creationSeconds = (performance.now() - started) / 1000
      await arrived
    })
    const { latencies, failed } = await health.stop()
    latencies.sort((a, b) => a - b)
    const p99 = percentile(latencies, 99)
    const met = (ok: boolean) => (ok ? 'met' : 'MISSED')
    const rss = figures.peakRssMiB ?? 0
    const note = [
      `creation ${creationSeconds.toFixed(2)} s (target < ${TARGETS.creationSeconds} s: ${met(creationSeconds < TARGETS.creationSeconds)})`,
      `/health every ${HEALTH_EVERY_MS} ms, ${latencies.length} samples: p50 ${percentile(latencies, 50).toFixed(1)} ms, ` +
        `p99 ${p99.toFixed(1)} ms, max ${(latencies.at(-1) ?? 0).toFixed(1)} ms, ${failed} failed ` +
        `(p99 target < ${TARGETS.healthP99Ms} ms: ${met(p99 < TARGETS.healthP99Ms && failed === 0)})`,
      `service peak RSS ${rss.toFixed(0)} MiB (target < ${TARGETS.peakRssMiB} MiB: ${met(rss < TARGETS.peakRssMiB)})`,
    ].join('; ')
    return [{ ...figures, target: { ratio: 0.8 }, note }]
  },
}

/** GET /health every HEALTH_EVERY_MS until stopped; resolves to every request's latency in ms. */
function sampleHealth(url: string): { stop(): Promise<{ latencies: number[]; failed: number }> } {
  const latencies: number[] = []
  let failed = 0
  const pending = new Set<Promise<void>>()
  let running = true
  const loop = (async () => {
    while (running) {
      const started = performance.now()
      const request = fetch(`${url}/health`)
        .then(async (response) => {
          await response.arrayBuffer()
          if (response.ok) latencies.push(performance.now() - started)
          else failed++
        })
        .catch(() => {
          failed++
        })
        .finally(() => pending.delete(request))
      pending.add(request)
      await sleep(HEALTH_EVERY_MS)
    }
  })()
  return {
    async stop() {
      running = false
      await loop
      await Promise.all(pending)
      return { latencies, failed }
    },
  }
}
