/**
 * /metrics counts scheduled mail and scheduled batches in the queue only once they are due: a
 * newsletter set for next week is not a queue falling behind.
 */
import { describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { createdBatch } from '../support/batches.ts'
import { DAY, MINUTE } from '../support/clock.ts'
import { email, postEnqueue } from '../support/queue.ts'
import { fromNow } from '../support/scheduling.ts'
import { startSender } from '../support/sending.ts'

const app = useTestApp()

async function gauges(): Promise<Record<string, number>> {
  const text = await (await app.requestRoot('/metrics')).text()
  const read = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN)
  return {
    depth: read('mailroom_queue_depth'),
    oldest: read('mailroom_queue_oldest_age_seconds'),
    batches: read('mailroom_batches_running'),
  }
}

describe('the queue gauges and scheduled mail', () => {
  it('leave out what is scheduled until it is due', async () => {
    const sender = await startSender(app, 'gauged', { plan: 'pro' })
    const before = await gauges()
    expect((await postEnqueue(app, sender.key, email({ scheduled_at: fromNow(7 * DAY) }))).status).toBe(200)
    await createdBatch(app, sender.key, {
      template: { subject: 's', text_body: 't' },
      recipients: ['b1@example.com', 'b2@example.com'],
      scheduled_at: fromNow(10 * MINUTE),
    })
    expect(await gauges()).toEqual(before)
  })
})
