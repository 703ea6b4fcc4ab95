/**
 * SIGKILL of a real worker process in the middle of a webhook delivery loses no event: the delivery it held is sent again, with the same webhook-id, once another worker
 * finds the process dead (that worker runs on a clock far enough ahead to find it so at once).
 */
import { once } from 'node:events'
import { afterAll, describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { mailroomEnv, spawnMailroom, startWorkerOnceDead, TEST_RETRY, waitFor } from '../support/queue.ts'
import { postSend, startSender } from '../support/sending.ts'
import { startWebhookReceiver, verified } from '../support/webhook-receiver.ts'

const app = useTestApp()
const TOTAL = 6

describe('kill -9 of the worker while a delivery is in flight', () => {
  const cleanup: (() => Promise<void>)[] = []
  afterAll(async () => {
    for (const step of cleanup) await step()
  })

  it('delivers every event after a restart; the interrupted one again with the same webhook-id', {
    timeout: 120_000,
  }, async () => {
    const s = await startSender(app, 'hookcrash')
    // The first request is never answered: the worker holds that delivery when it is killed.
    const receiver = await startWebhookReceiver((n) => (n === 0 ? 'hang' : 200))
    cleanup.push(() => receiver.close())
    const created = await app.request('/webhooks', {
      method: 'POST',
      key: s.key,
      body: { url: receiver.url, events: ['email.sent'] },
    })
    const { secret, webhook } = (await created.json()) as { secret: string; webhook: { id: number } }
    for (let i = 0; i < TOTAL; i++) {
      expect(
        (await postSend(app, s.key, { to: `r${i}@example.com`, subject: `S${i}`, text_body: 'x' })).status,
      ).toBe(200)
    }

    const worker = spawnMailroom(
      ['start', '--worker-only'],
      mailroomEnv(app.db.url, { MAILROOM_ALLOW_PRIVATE_WEBHOOK_URLS: '1' }),
    )
    try {
      await waitFor(
        () => `the worker's first delivery (output: ${worker.output()})`,
        () => (receiver.received.length > 0 ? true : undefined),
        30_000,
      )
      const [held] = await app.services.sql<{ n: number }[]>`
        select count(*)::int as n from webhook_deliveries where status = 'sending'`
      expect(held?.n, 'a delivery in flight at the kill').toBeGreaterThan(0)
    } finally {
      const exited = once(worker.child, 'exit')
      worker.child.kill('SIGKILL')
      await exited
    }
    const interrupted = String(receiver.received[0]?.headers['webhook-id'])
    // What the killed process held: their outcome is unknown, so they may arrive twice.
    const heldIds = (
      await app.services.sql<{ public_id: string }[]>`
        select v.public_id from webhook_deliveries d join webhook_events v on v.id = d.event_id
        where d.status = 'sending'`
    ).map((r) => r.public_id)
    expect(heldIds).toContain(interrupted)

    const restarted = await startWorkerOnceDead(app.db.url, { retry: TEST_RETRY, pollIntervalMs: 100 })
    cleanup.unshift(() => restarted.stop())
    const deliveries = async () =>
      app.services.sql<
        { status: string }[]
      >`select status from webhook_deliveries where endpoint_id = ${webhook.id}`
    await waitFor(
      'every delivery delivered',
      async () => ((await deliveries()).every((d) => d.status === 'delivered') ? true : undefined),
      90_000,
      200,
    )
    expect(await deliveries()).toHaveLength(TOTAL)
    const events = await Promise.all(receiver.received.map((r) => verified(r, secret)))
    const subjects = new Set(events.map((e) => (e.data as { subject: string }).subject))
    expect(subjects.size).toBe(TOTAL)
    // The only duplicates are deliveries the killed process held, under their own webhook-id.
    const seen = new Map<string, number>()
    for (const e of events) seen.set(e.id, (seen.get(e.id) ?? 0) + 1)
    expect(seen.size).toBe(TOTAL)
    expect(seen.get(interrupted)).toBe(2)
    for (const [id, count] of seen) if (count > 1) expect(heldIds).toContain(id)
  })
})
