/**
 * Queued mail waits, and never burns an attempt or ends failed, while its connection is paused,
 * disabled or out of quota or pacing; deleting the connection fails what still waits on it.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import {
  deleteConnection,
  disableConnection,
  pauseConnection,
  resumeConnection,
} from '../../src/connections/connections.ts'
import { useTestApp } from '../support/app.ts'
import { useDelivery } from '../support/delivery.ts'
import {
  email,
  enqueued,
  holdsUntil,
  outboxRecord,
  startAppBeforeTopOfHour,
  waitFor,
  waitForOutbox,
  waitForOutboxStatus,
} from '../support/queue.ts'
import { startSender } from '../support/sending.ts'
import type { ReceivedMessage } from '../support/smtp-sink.ts'

const app = useTestApp()
const { sender, record, counters, expectHeld } = useDelivery(app)

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
