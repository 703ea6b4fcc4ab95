/**
 * An email's webhook events carry its tags as data.tags, in the order given ([] for none): those
 * of a /send, of queued mail, and of a batch's emails, which carry the batch's.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { retryPolicy } from '../../src/queue/retry-policy.ts'
import { useTestApp } from '../support/app.ts'
import { createdBatch, waitForBatchEnd } from '../support/batches.ts'
import { email, enqueued, waitFor } from '../support/queue.ts'
import { postSend, startSender } from '../support/sending.ts'
import { useWebhookReceivers, verified } from '../support/webhook-receiver.ts'

const app = useTestApp()
const startReceiver = useWebhookReceivers()
afterEach(() => app.stopWorkers())

describe('data.tags of an email event', () => {
  it("is the email's tags, [] for none, whichever way the email went", { timeout: 30_000 }, async () => {
    const s = await startSender(app, 'hook-tags', {
      plan: 'pro',
      behaviour: { rejectRecipients: ['refused@example.com'] },
    })
    const receiver = await startReceiver()
    const created = await app.request('/webhooks', {
      method: 'POST',
      key: s.key,
      body: { url: receiver.url, events: ['email.sent', 'email.failed'] },
    })
    const { secret } = (await created.json()) as { secret: string }
    await app.worker({ retry: retryPolicy(50, 3, 50) })

    const tags = [
      { name: 'z-last', value: 'first' },
      { name: 'a_first', value: 'second' },
    ]
    // Each by its subject: a refused /send answers no outbox ID.
    const bodies = [email({ tags }), email({ to: 'refused@example.com', tags: tags.slice(1) }), email()]
    for (const body of bodies) await postSend(app, s.key, body)
    const queuedBody = email({ tags: tags.slice(0, 1) })
    await enqueued(app, s.key, queuedBody)
    const batch = await createdBatch(app, s.key, {
      recipients: ['b@example.com'],
      template: { subject: 'Batch', text_body: 'x' },
      tags,
    })
    await waitForBatchEnd(app, s.key, batch)

    const expected = new Map<unknown, unknown>([
      [bodies[0]?.subject, tags],
      [bodies[1]?.subject, tags.slice(1)],
      [bodies[2]?.subject, []],
      [queuedBody.subject, tags.slice(0, 1)],
      ['Batch', tags],
    ])
    const events = await waitFor(
      () => `events of ${expected.size} emails (got ${receiver.received.length})`,
      async () => {
        const all = await Promise.all(receiver.received.map((r) => verified(r, secret)))
        return all.length >= expected.size ? all : undefined
      },
      20_000,
    )
    const bySubject = new Map(events.map((e) => [(e.data as { subject: unknown }).subject, e]))
    for (const [subject, want] of expected) {
      const data = bySubject.get(subject)?.data as { tags: unknown } | undefined
      expect(data?.tags, String(subject)).toEqual(want)
    }
    expect(bySubject.get(bodies[1]?.subject)?.type).toBe('email.failed')
  })
})
