import { type Bench, message, type Scenario } from '../support.ts'

/** POST /send: each request waits for the SMTP server's answer; with and without Idempotency-Key. */
export const send: Scenario = {
  name: 'send',
  async run(bench: Bench) {
    const target = { ratio: 0.7, p50WithinMs: 5 }
    const plain = await bench.measure('POST /send', (i) => bench.post('/send', message(i, bench.from)))
    const keyed = await bench.measure('POST /send + Idempotency-Key', (i) =>
      bench.post('/send', message(i, bench.from), { 'idempotency-key': `bench-${i}` }),
    )
    const replays = await bench.measure('POST /send replay (same keys)', (i) =>
      bench.post('/send', message(i, bench.from), { 'idempotency-key': `bench-${i}` }),
    )
    return [plain, keyed, replays].map((row, i) => ({
      ...row,
      ...(i === 0 ? { target } : {}),
      fullSpeed: true,
    }))
  },
}
