/**
 * Queued mail and the SMTP server's answer per recipient (issue: "What the SMTP server said, per
 * recipient"): only recipients refused for now are tried again, under the same Message-ID; a
 * message ends `sent` when every recipient got it and `failed`, with each reason, otherwise; one
 * recipient's deferral holds up nothing else; and deferrals end after the queue lifetime.
 */
import { describe, expect, it } from 'vitest'
import { retryPolicy } from '../../src/queue/retry-policy.ts'
import type { RecipientOutcome } from '../../src/smtp/outcome.ts'
import { useTestApp } from '../support/app.ts'
import { email, enqueued, waitForOutbox, waitForOutboxStatus } from '../support/queue.ts'
import { quotaUsed, type Sender, type SenderOptions, startSender } from '../support/sending.ts'

// A database of its own per test: each starts its worker with the retry policy it needs.
const app = useTestApp({}, { each: true })

const BUSY = { code: 450, message: '4.2.1 Mailbox busy, try again later' }
const REJECTED = { code: 550, message: '5.7.1 Recipient address rejected' }

function sender(options: SenderOptions = {}): Promise<Sender> {
  return startSender(app, 'retries', { plan: 'pro', quota: { quota: 100, per: 'day' }, ...options })
}

async function recipientsOf(id: number): Promise<RecipientOutcome[] | null> {
  const [row] = await app.services.sql<{ recipients: RecipientOutcome[] | null }[]>`
    select recipients from outbox where id = ${id}`
  return row?.recipients ?? null
}

describe('queued mail retries only the recipients refused for now', () => {
  it('sends to the one taken, then to the deferred one alone under the same Message-ID; ends sent', async () => {
    const s = await sender({ behaviour: { recipientReplies: { 'cc@example.com': BUSY } } })
    await app.worker({ retry: retryPolicy(300, 5, 100) })
    const id = await enqueued(app, s.key, email({ to: 'ada@example.com', cc: 'cc@example.com' }))
    const partial = await waitForOutbox(app, s.accountId, id, (r) => r.status === 'queued' && r.attempts >= 1)
    expect(partial.recipients).toEqual([
      { address: 'ada@example.com', status: 'accepted', reply: null },
      { address: 'cc@example.com', status: 'deferred', reply: '450 4.2.1 Mailbox busy, try again later' },
    ])
    expect(s.sink.messages.map((m) => m.envelope.to)).toEqual([['ada@example.com']])

    s.sink.setBehaviour({ recipientReplies: {} })
    const sent = await waitForOutboxStatus(app, s.accountId, id, 'sent')
    expect(sent.error).toBeNull()
    expect(sent.recipients?.map((r) => r.status)).toEqual(['accepted', 'accepted'])
    const [first, second] = s.sink.messages
    expect(second?.envelope.to).toEqual(['cc@example.com'])
    expect(second?.headers.get('message-id')).toBe(first?.headers.get('message-id'))
    expect(second?.headers.get('message-id')).toBe(sent.message_id)
    // One message, one unit, however many attempts it took.
    expect(await quotaUsed(app, s.connectionId)).toBe(1)
  })

  it('a mix of 550 and 450 is read per recipient: the refused one is final, the deferred one tried again, then failed with each reason', async () => {
    const s = await sender({
      behaviour: { recipientReplies: { 'gone@example.com': REJECTED, 'busy@example.com': BUSY } },
    })
    await app.worker({ retry: retryPolicy(100, 3, 100) })
    const id = await enqueued(app, s.key, email({ to: 'gone@example.com', cc: 'busy@example.com' }))
    const failed = await waitForOutboxStatus(app, s.accountId, id, 'failed', 10_000)
    expect(failed.attempts).toBe(3)
    expect(failed.recipients).toEqual([
      { address: 'gone@example.com', status: 'refused', reply: '550 5.7.1 Recipient address rejected' },
      { address: 'busy@example.com', status: 'deferred', reply: '450 4.2.1 Mailbox busy, try again later' },
    ])
    expect(failed.error).toMatch(/gone@example\.com: 550 5\.7\.1.*busy@example\.com: 450 4\.2\.1/)
    // The refused one was tried once; the deferred one on every attempt.
    const attempts = await app.services.sql<{ recipients: RecipientOutcome[] }[]>`
      select recipients from outbox_attempts where outbox_id = ${id} order by id`
    expect(attempts.map((a) => a.recipients.map((r) => r.address))).toEqual([
      ['gone@example.com', 'busy@example.com'],
      ['busy@example.com'],
      ['busy@example.com'],
    ])
    expect(s.sink.messages).toHaveLength(0)
  })

  it('a delivered recipient is never sent the message again when a retry fails', async () => {
    const s = await sender({ behaviour: { recipientReplies: { 'cc@example.com': BUSY } } })
    await app.worker({ retry: retryPolicy(100, 2, 100) })
    const id = await enqueued(app, s.key, email({ to: 'ada@example.com', cc: 'cc@example.com' }))
    const failed = await waitForOutboxStatus(app, s.accountId, id, 'failed', 10_000)
    expect(failed.error).toMatch(
      /^Delivered to 1 of 2 recipients; Gave up after 2 failed attempts: cc@example\.com: 450/,
    )
    expect(s.sink.messages.flatMap((m) => m.envelope.to)).toEqual(['ada@example.com'])
    expect(await recipientsOf(id)).toEqual([
      { address: 'ada@example.com', status: 'accepted', reply: null },
      { address: 'cc@example.com', status: 'deferred', reply: '450 4.2.1 Mailbox busy, try again later' },
    ])
  })
})

describe('one deferred recipient holds up nothing else', () => {
  it('mail to others on the same connection goes while a throttled recipient waits; no back-off, no pause', async () => {
    const throttled = { code: 450, message: '4.7.1 Too many messages for this recipient' }
    const s = await sender({ behaviour: { recipientReplies: { 'throttled@example.com': throttled } } })
    // A long retry delay: the throttled message stays deferred for the whole test.
    await app.worker({ retry: retryPolicy(60_000, 5, 60_000) })
    const stuck = await enqueued(app, s.key, email({ to: 'throttled@example.com' }))
    await waitForOutbox(app, s.accountId, stuck, (r) => r.status === 'queued' && r.attempts === 1)
    const others = await Promise.all(
      Array.from({ length: 5 }, (_, i) => enqueued(app, s.key, email({ to: `other${i}@example.com` }))),
    )
    for (const id of others) await waitForOutboxStatus(app, s.accountId, id, 'sent')
    const [connection] = await app.services.sql<
      { queue_backoff_until: Date | null; consecutive_failures: number; paused_until: Date | null }[]
    >`select queue_backoff_until, consecutive_failures, paused_until from connections where id = ${s.connectionId}`
    expect(connection).toEqual({ queue_backoff_until: null, consecutive_failures: 0, paused_until: null })
  })
})

describe('deferrals end', () => {
  it('a recipient deferred forever ends failed with the last reply once the queue lifetime is over', async () => {
    const s = await sender({ behaviour: { recipientReplies: { 'ada@example.com': BUSY } } })
    // Many tries, but a lifetime of 1.5 s.
    await app.worker({ retry: retryPolicy(100, 1_000, 100, 1_500) })
    const id = await enqueued(app, s.key, email({ to: 'ada@example.com' }))
    const failed = await waitForOutboxStatus(app, s.accountId, id, 'failed', 10_000)
    expect(failed.error).toMatch(
      /^Still deferred after \d+ seconds?: 450 4\.2\.1 Mailbox busy, try again later$/,
    )
    expect(failed.attempts).toBeGreaterThan(1)
  })

  it("push-back that never stops ends too: failed with the provider's last reply", async () => {
    const s = await sender({ behaviour: { rejectData: { code: 451, message: '4.7.1 Slow down' } } })
    // One try only: were push-back a failure, the first would end it ("Gave up after 1").
    await app.worker({ retry: retryPolicy(100, 1, 100, 1_500) })
    const id = await enqueued(app, s.key, email())
    const failed = await waitForOutboxStatus(app, s.accountId, id, 'failed', 10_000)
    expect(failed.error).toMatch(/^Still deferred after \d+ seconds?: 451 4\.7\.1 Slow down$/)
    expect(failed.attempts).toBeGreaterThan(1)
  })
})
