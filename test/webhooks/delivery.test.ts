/**
 * Webhook deliveries against the real server, worker and an HTTP receiver started here (issue
 * 15, webhooks): every event type arrives once, signed; a 500 is retried with the same
 * webhook-id; a receiver that hangs is timed out; an endpoint failing for too long is disabled
 * with its reason.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createAudience } from '../../src/audiences/audiences.ts'
import { createForm } from '../../src/forms/forms.ts'
import { WebhookEventTypeSchema } from '../../src/generated/routes.ts'
import { retryPolicy } from '../../src/queue/retry-policy.ts'
import { setSignupPage } from '../../src/signups/signup-pages.ts'
import { DEFAULT_WEBHOOK_POLICY } from '../../src/webhooks/deliver.ts'
import type { WorkerOptions } from '../../src/worker/worker.ts'
import { useTestApp } from '../support/app.ts'
import { createdBatch, waitForBatchEnd } from '../support/batches.ts'
import { email, enqueued, holdsUntil, keyedRuns, waitFor, waitForMatch } from '../support/queue.ts'
import { postSend, type Sender, startSender } from '../support/sending.ts'
import {
  type Answer,
  type ReceivedWebhook,
  useWebhookReceivers,
  verified,
} from '../support/webhook-receiver.ts'

const app = useTestApp()
const startReceiver = useWebhookReceivers()
// Each test's worker has its own policy: one left running would take the next test's jobs.
afterEach(() => app.stopWorkers())

const ALL_EVENTS = WebhookEventTypeSchema.options

/** Fast retries, a short timeout: the schedule's shape with the test's patience. */
function workerWith(webhooks: Partial<WorkerOptions['webhooks']> = {}, options: Partial<WorkerOptions> = {}) {
  return app.worker({
    ...options,
    webhooks: { ...DEFAULT_WEBHOOK_POLICY, retryDelaysMs: [200, 200, 200], timeoutMs: 1_000, ...webhooks },
  })
}

async function endpointFor(s: Sender, answer?: Answer, events = ALL_EVENTS) {
  const receiver = await startReceiver(answer)
  const res = await app.request('/webhooks', {
    method: 'POST',
    key: s.key,
    body: { url: receiver.url, events },
  })
  expect(res.status).toBe(201)
  const body = (await res.json()) as { webhook: { id: number }; secret: string }
  expect(body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
  return { receiver, secret: body.secret, id: body.webhook.id }
}

/**
 * One of each event for `s`'s account: a send and a failed one, a deferred queued email, a
 * completed and a failed batch, a sign-up and a form submission.
 */
async function makeEveryEvent(s: Sender) {
  const sent = await postSend(app, s.key, { to: 'ann@example.com', subject: 'Hi', text_body: 'x' })
  const failed = await postSend(app, s.key, { to: 'refused@example.com', subject: 'No', text_body: 'x' })
  expect([sent.status, failed.status]).toEqual([200, 500])
  const deferredId = await enqueued(app, s.key, email({ to: 'later@example.com' }))
  const completed = await createdBatch(app, s.key, {
    recipients: ['b1@example.com', 'b2@example.com'],
    template: { subject: 'Batch', text_body: 'x' },
  })
  const failedBatch = await createdBatch(app, s.key, {
    recipients: ['nobody1@example.com', 'nobody2@example.com'],
    template: { subject: 'Batch', text_body: 'x' },
  })
  await waitForBatchEnd(app, s.key, completed)
  await waitForBatchEnd(app, s.key, failedBatch)

  const audience = await createAudience(app.services.sql, s.accountId, { name: 'News' })
  await setSignupPage(app.services.sql, s.accountId, audience.id, { slug: 'hook-news' }, '')
  const signup = await app.requestRoot('/signup/hook-news', {
    method: 'POST',
    body: new URLSearchParams({ email: 'joiner@example.com' }),
  })
  expect(signup.status).toBe(200)
  const form = await createForm(app.services.sql, s.accountId, { name: 'Contact' }, '')
  const submitted = await app.requestRoot(`/forms/${form.public_id}`, {
    method: 'POST',
    body: new URLSearchParams({ email: 'guest@example.com', message: 'Hello' }),
  })
  expect(submitted.status).toBe(200)
  return { sent, deferredId, completed, failedBatch, form }
}

/** The events among `received` of `type` whose data `match` takes, each verified with `secret`. */
function eventsOf(received: ReceivedWebhook[], secret: string) {
  return async (type: string, match: (data: Record<string, unknown>) => boolean) =>
    (await Promise.all(received.map((r) => verified(r, secret)))).filter(
      (e) => e.type === type && match(e.data as Record<string, unknown>),
    )
}

/** Each event type with a test of its data that picks out the event `makeEveryEvent` caused. */
function expectedEvents({
  sent,
  deferredId,
  completed,
  failedBatch,
  form,
}: Awaited<ReturnType<typeof makeEveryEvent>>): [string, (data: Record<string, unknown>) => boolean][] {
  const expected: [string, (data: Record<string, unknown>) => boolean][] = [
    ['email.sent', (d) => d.outbox_id === sent.body.outboxId],
    // A batch recipient's record keeps no subject of its own: the event's is rendered, as sent.
    [
      'email.sent',
      (d) => d.batch_id === completed && String(d.to) === 'b1@example.com' && d.subject === 'Batch',
    ],
    ['email.failed', (d) => d.subject === 'No'],
    ['email.deferred', (d) => d.outbox_id === deferredId],
    ['batch.completed', (d) => d.batch_id === completed],
    ['batch.failed', (d) => d.batch_id === failedBatch],
    ['audience.member_added', (d) => d.email === 'joiner@example.com'],
    ['form.submitted', (d) => d.form_id === form.public_id],
  ]
  return expected
}

describe('every event type', () => {
  it('arrives once, signed with the endpoint secret, with the data of what happened', {
    timeout: 60_000,
  }, async () => {
    const s = await startSender(app, 'events', {
      plan: 'pro',
      behaviour: {
        rejectRecipients: ['refused@example.com', 'nobody1@example.com', 'nobody2@example.com'],
        recipientReplies: { 'later@example.com': { code: 450, message: '4.2.1 Mailbox busy' } },
      },
    })
    const { receiver, secret } = await endpointFor(s)
    // The deferred message is not tried again before the test ends: one attempt, one event.
    await workerWith({}, { retry: retryPolicy(600_000, 8, 600_000) })

    const made = await makeEveryEvent(s)
    const { sent, deferredId, completed, form } = made

    const has = eventsOf(receiver.received, secret)
    const expected = expectedEvents(made)
    await waitFor(
      () => `every event type (got ${receiver.received.map((r) => JSON.parse(r.body).type).join(', ')})`,
      async () => {
        for (const [type, match] of expected) if ((await has(type, match)).length === 0) return undefined
        return true
      },
      30_000,
    )
    // Settled: nothing more is coming for these.
    await app.stopWorkers()
    const [record] = await app.services.sql<{ status: string; attempts: number }[]>`
      select status, attempts from outbox where id = ${deferredId}`
    expect(record).toEqual({ status: 'queued', attempts: 1 })
    for (const [type, match] of expected) {
      const events = await has(type, match)
      expect(events.length, type).toBe(1)
    }
    const ids = receiver.received.map((r) => r.headers['webhook-id'])
    expect(new Set(ids).size, 'no event sent twice').toBe(ids.length)
    const keys = receiver.received.flatMap((r) => Object.keys(JSON.parse(r.body).data ?? {}))
    expect(keys, 'what the store keeps to render a subject is not sent').not.toContain('_batch_content')

    const [sentEvent] = await has('email.sent', (d) => d.outbox_id === sent.body.outboxId)
    expect(sentEvent).toMatchObject({
      type: 'email.sent',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      data: {
        status: 'sent',
        from: s.from,
        to: ['ann@example.com'],
        subject: 'Hi',
        batch_id: null,
        recipients: [{ address: 'ann@example.com', status: 'accepted' }],
      },
    })
    const [batchEvent] = await has('batch.completed', (d) => d.batch_id === completed)
    expect(batchEvent?.data).toEqual({
      batch_id: completed,
      name: expect.any(String),
      status: 'completed',
      total_count: 2,
      sent_count: 2,
      failed_count: 0,
    })
    const [formEvent] = await has('form.submitted', (d) => d.form_id === form.public_id)
    expect(formEvent?.data).toMatchObject({
      form_name: 'Contact',
      fields: [
        { name: 'email', value: 'guest@example.com' },
        { name: 'message', value: 'Hello' },
      ],
    })
  })

  it('only the types an endpoint subscribed to reach it, and none reaches another account', async () => {
    const a = await startSender(app, 'only', { behaviour: { rejectRecipients: ['nobody@example.com'] } })
    const b = await startSender(app, 'other')
    const { receiver, secret } = await endpointFor(a, undefined, ['email.failed'])
    const other = await endpointFor(b)
    await workerWith()
    await postSend(app, a.key, { to: 'ann@example.com', subject: 'Hi', text_body: 'x' })
    await postSend(app, a.key, { to: 'nobody@example.com', subject: 'Hi', text_body: 'x' })
    const recorded = await app.services.sql<{ type: string }[]>`
      select type from webhook_events where account_id = ${a.accountId} order by id`
    expect(recorded.map((r) => r.type)).toEqual(['email.failed'])
    await waitFor('the event', () => (receiver.received.length > 0 ? true : undefined))
    expect((await verified(receiver.received[0] as never, secret)).data).toMatchObject({
      to: ['nobody@example.com'],
    })
    expect(other.receiver.received).toEqual([])
  })
})

describe("an endpoint's runs", () => {
  it('once its deliveries are done, none asks for another', async () => {
    const s = await startSender(app, 'last-run')
    const { receiver, id } = await endpointFor(s, undefined, ['email.sent'])
    await workerWith()
    await postSend(app, s.key, { to: 'ann@example.com', subject: 'Hi', text_body: 'x' })
    await waitFor('the event', () => (receiver.received.length >= 1 ? true : undefined), 10_000)
    const runs = () => keyedRuns(app, `webhook:${id}`)
    await waitForMatch('the runs of the endpoint', runs, (left) => left.length === 0, 5_000)
    // The worker polls every 100 ms here: a run asked for would show within the second.
    const checked = await holdsUntil(Date.now() + 1_000, runs, (left) => expect(left).toEqual([]))
    expect(checked).toBeGreaterThan(0)
    expect(receiver.received).toHaveLength(1)
  })
})

describe('retries', () => {
  it('a receiver answering 500 then 200 gets the event again with the same webhook-id', async () => {
    const s = await startSender(app, 'retry')
    const { receiver, secret, id } = await endpointFor(s, (n) => (n === 0 ? 500 : 200), ['email.sent'])
    await workerWith()
    await postSend(app, s.key, { to: 'ann@example.com', subject: 'Hi', text_body: 'x' })
    await waitFor('two attempts', () => (receiver.received.length >= 2 ? true : undefined), 10_000)
    const [first, second] = await Promise.all(receiver.received.map((r) => verified(r, secret)))
    expect(second?.id).toBe(first?.id)
    expect(second?.data).toEqual(first?.data)
    const deliveries = await deliveriesOf(s.key, id)
    expect(deliveries).toMatchObject([
      { status: 'delivered', attempts: 2, response_status: 200, error: null },
    ])
  })

  it('a receiver that hangs is timed out, and the attempt is recorded as such', async () => {
    const s = await startSender(app, 'hang')
    const { receiver, id } = await endpointFor(s, (n) => (n === 0 ? 'hang' : 204), ['email.sent'])
    await workerWith({ timeoutMs: 500 })
    await postSend(app, s.key, { to: 'ann@example.com', subject: 'Hi', text_body: 'x' })
    await waitFor(
      'the retry after the timeout',
      () => (receiver.received.length >= 2 ? true : undefined),
      10_000,
    )
    await waitFor('delivered', async () =>
      (await deliveriesOf(s.key, id))[0]?.status === 'delivered' ? true : undefined,
    )
    const [delivery] = await deliveriesOf(s.key, id)
    expect(delivery).toMatchObject({ attempts: 2, response_status: 204 })
    const history = await app.services.sql<{ error: string | null }[]>`
      select error from webhook_deliveries where endpoint_id = ${id}`
    expect(history).toEqual([{ error: null }])
  })

  it('a delivery whose attempts all fail ends failed with the last answer', async () => {
    const s = await startSender(app, 'giveup')
    const { receiver, id } = await endpointFor(s, () => 503, ['email.sent'])
    await workerWith({ retryDelaysMs: [100, 100] })
    await postSend(app, s.key, { to: 'ann@example.com', subject: 'Hi', text_body: 'x' })
    await waitFor('failed', async () =>
      (await deliveriesOf(s.key, id))[0]?.status === 'failed' ? true : undefined,
    )
    expect(receiver.received).toHaveLength(3)
    expect((await deliveriesOf(s.key, id))[0]).toMatchObject({
      attempts: 3,
      response_status: 503,
      error: 'The endpoint answered HTTP 503',
    })
  })

  it('an endpoint failing for longer than the limit is disabled, and its owner is told why', async () => {
    const s = await startSender(app, 'disable')
    const { receiver, id } = await endpointFor(s, () => 500, ['email.sent'])
    await workerWith({ retryDelaysMs: [100, 100, 100, 100], disableAfterMs: 150 })
    await postSend(app, s.key, { to: 'ann@example.com', subject: 'Hi', text_body: 'x' })
    const webhook = await waitFor('disabled', async () => {
      const res = await app.request(`/webhooks/${id}`, { key: s.key })
      const body = (await res.json()) as { webhook: { enabled: boolean; disabled_reason: string | null } }
      return body.webhook.enabled ? undefined : body.webhook
    })
    expect(webhook.disabled_reason).toMatch(
      /^Every delivery failed since .* UTC; the last one: The endpoint answered HTTP 500$/,
    )
    // The delivery whose attempt disabled it ends failed with its own error: nothing waits.
    const [last] = await deliveriesOf(s.key, id)
    expect(last).toMatchObject({
      status: 'failed',
      error: 'The endpoint answered HTTP 500',
      next_attempt_at: null,
    })
    expect(typeof last?.id).toBe('number')
    const attempts = receiver.received.length
    // Nothing is recorded for a disabled endpoint.
    await postSend(app, s.key, { to: 'ann@example.com', subject: 'Hi', text_body: 'x' })
    const [count] = await app.services.sql<{ n: number }[]>`
      select count(*)::int as n from webhook_deliveries where endpoint_id = ${id}`
    expect(count?.n).toBe(1)
    expect(receiver.received.length).toBe(attempts)
  })
})

async function deliveriesOf(key: string, id: number) {
  const res = await app.request(`/webhooks/${id}/deliveries`, { key })
  expect(res.status).toBe(200)
  return ((await res.json()) as { deliveries: Record<string, unknown>[] }).deliveries
}
