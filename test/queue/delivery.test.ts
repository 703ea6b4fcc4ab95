/**
 * Contract tests for the delivery of queued mail by the worker (quota, pacing, provider
 * push-back, paused/disabled/deleted connections): what arrives, retries of transient
 * failures, permanent failures recorded with the server's reason, and every kind of waiting,
 * none of which may burn an attempt or end the message failed.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  deleteConnection,
  disableConnection,
  pauseConnection,
  resumeConnection,
} from '../../src/connections/connections.ts'
import type { OutboxRecord } from '../../src/db/outbox-types.ts'
import { useTestApp } from '../support/app.ts'
import {
  email,
  enqueued,
  holdsUntil,
  outboxRecord,
  startAppBeforeTopOfHour,
  TEST_RETRY,
  waitFor,
  waitForOutbox,
  waitForOutboxStatus,
} from '../support/queue.ts'
import { type Sender, type SenderOptions, startSender } from '../support/sending.ts'
import type { ReceivedMessage } from '../support/smtp-sink.ts'

const app = useTestApp()

beforeAll(async () => {
  await app.worker()
})

function sender(options: SenderOptions = {}): Promise<Sender> {
  return startSender(app, 'queued', { plan: 'pro', ...options })
}

function record(s: Sender, id: number): Promise<OutboxRecord> {
  return outboxRecord(app, s.accountId, id)
}

/** The retry counters the outbox does not show: transient failures and push-backs. */
async function counters(id: number): Promise<{ failures: number; deferrals: number }> {
  const [row] = await app.services.sql<{ failures: number; deferrals: number }[]>`
    select failures, deferrals from outbox where id = ${id}`
  if (!row) throw new Error(`no outbox record ${id}`)
  return row
}

/**
 * Proves that nothing happens for `ms`: the sink gets nothing and the record stays queued with
 * no attempt made, checked throughout.
 */
async function expectHeld(s: Sender, id: number, ms = 1_500): Promise<void> {
  const until = Date.now() + ms
  while (Date.now() < until) {
    expect(s.sink.messages).toHaveLength(0)
    expect(await record(s, id)).toMatchObject({ status: 'queued', attempts: 0 })
    await sleep(100)
  }
}

function addressesIn(header: string | undefined): string[] {
  return (header ?? '').match(/[^\s<>,"]+@[^\s<>,"]+/g) ?? []
}

// ------------------------------------------------------------------------------------------------

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

describe('held mail: paused, disabled, deleted connections', () => {
  it('a connection the service paused for a while sends the held mail by itself when the pause ends', async () => {
    const s = await sender()
    await app.services.sql`
      update connections set paused_until = mailroom_now() + interval '2 seconds' where id = ${s.connectionId}`
    const id = await enqueued(app, s.key)
    await expectHeld(s, id, 1_500)

    await s.sink.waitForMessages(1, 5_000)
    expect(await waitForOutboxStatus(app, s.accountId, id, 'sent')).toMatchObject({ attempts: 1 })
  })

  it('five push-backs in a row pause the connection; its mail waits, neither failed nor retried, until resumed', async () => {
    const s = await sender({
      behaviour: { rejectData: { code: 421, message: '4.7.0 Too many connections, slow down' } },
    })
    const id = await enqueued(app, s.key)
    await waitFor(
      async () =>
        JSON.stringify(
          await app.services
            .sql`select consecutive_failures, failure_window_until, paused_until, queue_backoff_until, mailroom_now() as now from connections where id = ${s.connectionId}`,
        ) +
        JSON.stringify(
          await app.services.sql`select attempt, at, outcome from outbox_attempts where outbox_id = ${id}`,
        ),
      async () => {
        const [row] = await app.services.sql<{ paused: boolean }[]>`
        select coalesce(paused_until > mailroom_now(), false) as paused from connections where id = ${s.connectionId}`
        return row?.paused ? true : undefined
      },
      10_000,
    )
    // The pause is recorded during the fifth attempt, just before the message goes back to the queue.
    const paused = await waitForOutbox(app, s.accountId, id, (r) => r.status !== 'sending')
    expect(paused).toMatchObject({ status: 'queued', attempts: 5 })
    await sleep(1_500)
    expect(await record(s, id)).toMatchObject({ status: 'queued', attempts: 5 })

    s.sink.setBehaviour({ rejectData: undefined })
    await resumeConnection(app.services.sql, s.connectionId)
    expect(await waitForOutboxStatus(app, s.accountId, id, 'sent')).toMatchObject({ attempts: 6 })
    expect(await counters(id)).toEqual({ failures: 0, deferrals: 5 })
  })

  it('a connection paused before the enqueue holds the mail until it is resumed, then delivers it', async () => {
    const s = await sender()
    await pauseConnection(app.services.sql, s.connectionId)
    const id = await enqueued(app, s.key)
    await expectHeld(s, id)

    await resumeConnection(app.services.sql, s.connectionId)
    await s.sink.waitForMessages(1, 5_000)
    expect(await waitForOutboxStatus(app, s.accountId, id, 'sent')).toMatchObject({ attempts: 1 })
  })

  it('a connection disabled after the mail was queued holds it (not sent, not failed) until enabled', async () => {
    const s = await sender()
    // Without a worker, so that the mail is surely still queued when the connection is disabled.
    await app.stopWorkers()
    const id = await enqueued(app, s.key)
    await disableConnection(app.services.sql, s.connectionId, true)
    await app.worker()
    await expectHeld(s, id, 2_000)

    await disableConnection(app.services.sql, s.connectionId, false)
    await s.sink.waitForMessages(1, 5_000)
    expect(await waitForOutboxStatus(app, s.accountId, id, 'sent')).toMatchObject({ attempts: 1 })
  })

  it('deleting the connection fails the mail still waiting on it with "connection deleted"', async () => {
    const s = await sender()
    await pauseConnection(app.services.sql, s.connectionId)
    const id = await enqueued(app, s.key)
    await deleteConnection(app.services.sql, s.connectionId)

    const failed = await waitForOutboxStatus(app, s.accountId, id, 'failed')
    expect(failed.error).toBe('connection deleted')
    expect(failed.next_attempt_at).toBeNull()
    await sleep(500)
    expect(await record(s, id)).toMatchObject({ status: 'failed', error: 'connection deleted' })
    expect(s.sink.messages).toHaveLength(0)
  })
})

describe('limits make queued mail wait, never fail', () => {
  it('quota used up: the mail waits for the next window (injected clock: 8 s before the top of the hour)', async () => {
    // Mailroom's clock reaches a top of the hour 8 s from now.
    const { app: clockApp, boundary } = await startAppBeforeTopOfHour(8_000)
    try {
      const s = await startSender(clockApp, 'hourly', { plan: 'pro', quota: { quota: 2, per: 'hour' } })
      await clockApp.worker()
      const ids: number[] = []
      for (const i of [1, 2, 3])
        ids.push(await enqueued(clockApp, s.key, email({ to: `hourly${i}@example.com` })))

      await s.sink.waitForMessages(2, 3_000)
      expect(boundary - Date.now(), 'the first two must arrive well before the window ends').toBeGreaterThan(
        500,
      )
      // Lanes claim side by side, so any one of the three may be the one left over.
      const [waiting] = await Promise.all(ids.map((id) => outboxRecord(clockApp, s.accountId, id))).then(
        (all) => all.filter((r) => r.status === 'queued'),
      )
      if (!waiting) throw new Error('none of the three waits for the next window')
      // Until the window ends: two sent, the third queued, no attempt burnt.
      const checked = await holdsUntil(
        boundary - 200,
        async () => ({
          arrived: s.sink.messages.length,
          record: await outboxRecord(clockApp, s.accountId, waiting.id),
        }),
        ({ arrived, record }) => {
          expect(arrived).toBe(2)
          expect(record).toMatchObject({ status: 'queued', attempts: 0 })
        },
      )
      expect(checked).toBeGreaterThan(3)

      const all = await s.sink.waitForMessages(3, 13_000)
      const last = all[2] as ReceivedMessage
      expect(last.envelope.to).toEqual(waiting.to)
      expect(last.receivedAt.getTime()).toBeGreaterThanOrEqual(boundary - 50)
      expect(await waitForOutboxStatus(clockApp, s.accountId, waiting.id, 'sent')).toMatchObject({
        attempts: 1,
      })
    } finally {
      await clockApp.close()
    }
  })

  it('pacing (rate 60, bucket 10): 13 queued go 10 at once, then about one a second, none failed', async () => {
    const s = await sender({ rate: 60 })
    // No token is taken before the mail is queued: a lower bound that no delay can break.
    const queuedFrom = Date.now()
    const ids = await Promise.all(
      Array.from({ length: 13 }, (_, i) => enqueued(app, s.key, email({ to: `paced${i}@example.com` }))),
    )
    const seen = new Set<string>()
    await waitFor(
      '13 paced messages',
      async () => {
        const rows = await app.services.sql<{ status: string }[]>`
          select status from outbox where id = any(${ids})`
        for (const row of rows) seen.add(row.status)
        return s.sink.messages.length >= 13 ? true : undefined
      },
      10_000,
      50,
    )
    expect(seen.has('failed')).toBe(false)

    const times = s.sink.messages.map((m) => m.receivedAt.getTime()).sort((a, b) => a - b)
    const first = times[0] as number
    // A burst: one a second would take nine seconds for ten, a smaller bucket several.
    expect((times[9] as number) - first, 'the first ten go at once').toBeLessThan(3_000)
    // The 11th waits for the first token refilled, the 13th for the third: 1 s and 3 s at least.
    expect((times[10] as number) - queuedFrom).toBeGreaterThanOrEqual(990)
    expect((times[12] as number) - queuedFrom, 'then one a second').toBeGreaterThanOrEqual(2_990)
    expect((times[12] as number) - first).toBeLessThan(6_000)
    for (const id of ids) {
      // Waiting for a token is not an attempt.
      expect(await waitForOutboxStatus(app, s.accountId, id, 'sent')).toMatchObject({ attempts: 1 })
    }
  })
})
