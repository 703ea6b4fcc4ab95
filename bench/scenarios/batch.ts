import { addresses, type Bench, type Scenario } from '../support.ts'

const RECIPIENTS = 1000

/** One 1000-recipient batch through the one connection, from creation until the last message arrived. */
export const batch: Scenario = {
  name: 'batch',
  async run(bench: Bench) {
    const template = { subject: 'Bench {{first_name}}', text_body: 'Hello from the bench' }
    const figures = await bench.timed(`1 batch ×${RECIPIENTS} → delivered`, RECIPIENTS, async () => {
      const arrived = bench.delivered(RECIPIENTS)
      await bench.post('/send/batch', {
        from: bench.from,
        template,
        recipients: addresses(RECIPIENTS, 'one'),
      })
      await arrived
    })
    return [{ ...figures, target: { ratio: 0.8 }, fullSpeed: true }]
  },
}
