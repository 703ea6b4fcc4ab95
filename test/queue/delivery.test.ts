/**
 * The delivery of queued mail by the worker: what arrives, retries of transient failures with
 * back-off, permanent failures recorded with the server's reason, and provider quota replies.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { useDelivery } from '../support/delivery.ts'
import { email, enqueued, TEST_RETRY, waitFor, waitForOutbox, waitForOutboxStatus } from '../support/queue.ts'
import { addressesIn } from '../support/send-request.ts'
import type { ReceivedMessage } from '../support/smtp-sink.ts'

const app = useTestApp()
const { sender, record, counters } = useDelivery(app)

describe('delivery', () => {
  it('delivers within a second or two: subject, bodies, To/Cc headers, Bcc only in the envelope, the recorded Message-ID', async () => {
    const s = await sender()
    const to = ['ada@example.com', 'alan@example.com']
    const started = Date.now()
    const id = await enqueued(
      app,
      s.key,
      email({
        to,
        cc: 'grace@example.com',
        bcc: ['hidden@example.com'],
        subject: 'Queued hello',
        text_body: 'Plain words',
        html_body: '<p>Rich words</p>',
      }),
    )
    const [received] = (await s.sink.waitForMessages(1, 3_000)) as [ReceivedMessage]
    expect(Date.now() - started).toBeLessThan(3_000)

    expect(received.envelope.from).toBe(s.from)
    expect([...received.envelope.to].sort()).toEqual(
      ['ada@example.com', 'alan@example.com', 'grace@example.com', 'hidden@example.com'].sort(),
    )
    expect(addressesIn(received.headers.get('from'))).toEqual([s.from])
    expect(addressesIn(received.headers.get('to'))).toEqual(to)
    expect(addressesIn(received.headers.get('cc'))).toEqual(['grace@example.com'])
    expect(received.headers.has('bcc')).toBe(false)
    expect(received.headers.get('subject')).toBe('Queued hello')
    expect(received.raw).toContain('Plain words')
    expect(received.raw).toContain('<p>Rich words</p>')

    const sent = await waitForOutboxStatus(app, s.accountId, id, 'sent')
    expect(sent).toMatchObject({ attempts: 1, error: null, next_attempt_at: null })
    expect(sent.sent_at).not.toBeNull()
    expect(received.headers.get('message-id')).toBe(sent.message_id)
    expect(s.sink.messages).toHaveLength(1)
  })

  it('sends many queued messages, each once', async () => {
    const s = await sender()
    const ids = await Promise.all(
      Array.from({ length: 20 }, (_, i) => enqueued(app, s.key, email({ to: `many${i}@example.com` }))),
    )
    await s.sink.waitForMessages(20, 10_000)
    for (const id of ids) await waitForOutboxStatus(app, s.accountId, id, 'sent')
    const recipients = s.sink.messages.map((m) => m.envelope.to[0]).sort()
    expect(recipients).toEqual(Array.from({ length: 20 }, (_, i) => `many${i}@example.com`).sort())
  })
})

describe('transient and permanent failures', () => {
  // A recipient deferred at RCPT: a transient failure of the message, not of the connection.
  const TRANSIENT = {
    recipientReplies: { 'rcpt@example.com': { code: 450, message: '4.2.1 Mailbox temporarily unavailable' } },
  }

  it('retries a transient failure with back-off until it is delivered', async () => {
    const s = await sender({ behaviour: TRANSIENT })
    const id = await enqueued(app, s.key)
    // Two failed attempts, recorded with the server's reason, the message still queued for later.
    const waiting = await waitForOutbox(app, s.accountId, id, (r) => r.attempts >= 2 && r.status === 'queued')
    expect(waiting.error).toMatch(/450/)
    expect(waiting.next_attempt_at).not.toBeNull()
    s.sink.setBehaviour({ recipientReplies: {} })

    const sent = await waitForOutboxStatus(app, s.accountId, id, 'sent')
    expect(sent.attempts).toBeGreaterThan(1)
    // The earlier attempts' error no longer stands beside `sent`.
    expect(sent.error).toBeNull()
    expect(s.sink.messages).toHaveLength(1)
    expect(s.sink.messages[0]?.headers.get('message-id')).toBe(sent.message_id)
  })

  it.each([
    [
      'a refused recipient (550 5.1.1)',
      { rejectRecipients: ['gone@example.com'] },
      /550.*5\.1\.1.*User unknown/,
    ],
    [
      'a refused message (554 5.7.1)',
      { rejectData: { code: 554, message: '5.7.1 Message rejected as spam' } },
      /554.*5\.7\.1 Message rejected as spam/,
    ],
  ])(
    'a permanent failure, %s, ends the record failed with the server reason after one attempt',
    async (_label, behaviour, reason) => {
      const s = await sender({ behaviour })
      const id = await enqueued(app, s.key, email({ to: 'gone@example.com' }))
      const failed = await waitForOutboxStatus(app, s.accountId, id, 'failed')
      expect(failed.error).toMatch(reason)
      expect(failed.attempts).toBe(1)
      expect(failed.next_attempt_at).toBeNull()
      // Failed for good: not tried again.
      await sleep(500)
      expect(await record(s, id)).toMatchObject({ status: 'failed', attempts: 1 })
      expect(s.sink.messages).toHaveLength(0)
    },
  )

  it(`gives up after ${TEST_RETRY.maxFailures} transient failures: failed, with the server's reason`, async () => {
    const s = await sender({ behaviour: TRANSIENT })
    const id = await enqueued(app, s.key)
    const failed = await waitForOutboxStatus(app, s.accountId, id, 'failed', 10_000)
    expect(failed.error).toMatch(
      /Gave up after 3 failed attempts: 450 4\.2\.1 Mailbox temporarily unavailable/,
    )
    expect(failed.attempts).toBe(TEST_RETRY.maxFailures)
    expect((await counters(id)).failures).toBe(TEST_RETRY.maxFailures)
    expect(s.sink.messages).toHaveLength(0)
  })

  it('a server that drops the session mid-message though its login works: each attempt spends a try, then given up with the reason', async () => {
    // A probe finds the server answering each time, so the message itself is tried again: a
    // message that breaks the session every time ends like any other transient failure.
    const s = await sender({ behaviour: { dropAfterData: true } })
    const id = await enqueued(app, s.key)
    const failed = await waitForOutboxStatus(app, s.accountId, id, 'failed', 10_000)
    expect(failed.error).toMatch(/^Gave up after 3 failed attempts: .*Connection closed unexpectedly/)
    expect(failed.attempts).toBe(TEST_RETRY.maxFailures)
    expect((await counters(id)).failures).toBe(TEST_RETRY.maxFailures)
  })

  it('provider push-back (451 4.7.1) backs off without counting failures: pushed back more often than maxFailures, still delivered', async () => {
    const s = await sender({
      behaviour: { rejectData: { code: 451, message: '4.7.1 Too many messages, slow down' } },
    })
    const id = await enqueued(app, s.key)
    const pushbacks = TEST_RETRY.maxFailures + 1
    // Not one more: five provider failures in a row would pause the connection for 15 minutes.
    let sawFailed = false
    await waitFor(
      `${pushbacks} push-backs`,
      async () => {
        const r = await record(s, id)
        if (r.status === 'failed') sawFailed = true
        return sawFailed || (r.attempts >= pushbacks && r.status === 'queued') ? r : undefined
      },
      10_000,
    )
    expect(sawFailed).toBe(false)
    s.sink.setBehaviour({ rejectData: undefined })

    const sent = await waitForOutboxStatus(app, s.accountId, id, 'sent', 10_000)
    expect(sent.attempts).toBe(pushbacks + 1)
    expect(await counters(id)).toEqual({ failures: 0, deferrals: pushbacks })
    expect(s.sink.messages).toHaveLength(1)
  })
})

describe('provider quota replies', () => {
  it.each([
    ['Gmail 550 5.4.5', { code: 550, message: '5.4.5 Daily user sending quota exceeded' }],
    [
      'Microsoft 554 5.2.0 QuotaExceeded',
      { code: 554, message: '5.2.0 STOREDRV.Submission.Exception:SubmissionQuotaExceededException' },
    ],
  ])(
    'a 5xx quota reply (%s) is push-back: the mail waits instead of failing, then is delivered',
    async (_label, reply) => {
      const s = await sender({ behaviour: { rejectData: reply } })
      const id = await enqueued(app, s.key)
      const waiting = await waitForOutbox(
        app,
        s.accountId,
        id,
        (r) => r.status === 'failed' || r.status === 'sent' || (r.status === 'queued' && r.attempts >= 2),
      )
      expect(waiting).toMatchObject({ status: 'queued', attempts: 2 })
      s.sink.setBehaviour({ rejectData: undefined })

      expect(await waitForOutboxStatus(app, s.accountId, id, 'sent')).toMatchObject({ attempts: 3 })
      expect(await counters(id)).toEqual({ failures: 0, deferrals: 2 })
    },
  )
})
