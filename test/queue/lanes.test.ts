/**
 * A queue run's lane does not wait for the record of a message before it sends the next one
 * (src/queue/drain.ts), but it has at most one message at SMTP and one being recorded. A lane
 * that finds nothing due waits for the others (src/queue/parking.ts) rather than ending.
 */
import { describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { email, enqueued, holdsUntil, outboxStatusCounts, waitFor } from '../support/queue.ts'
import { startSender } from '../support/sending.ts'

const app = useTestApp()

describe('a lane and the records of its messages', () => {
  it('sends its next message while the record of the one before waits, and no third until that record is in', {
    timeout: 30_000,
  }, async () => {
    const s = await startSender(app, 'lane-records', { plan: 'pro' })
    for (let i = 0; i < 3; i++) await enqueued(app, s.key, email({ to: `lane${i}@example.com` }))
    // Every record of an attempt adds a line to its history: holding that table holds every record.
    let releaseHistory = () => {}
    const historyHeld = new Promise<void>((resolve) => (releaseHistory = resolve))
    let historyLocked = () => {}
    const locked = new Promise<void>((resolve) => (historyLocked = resolve))
    const holding = app.services.sql.begin(async (tx) => {
      await tx`lock table outbox_attempts in exclusive mode`
      historyLocked()
      await historyHeld
    })
    await locked
    await app.worker({ lanes: 1 })
    try {
      await waitFor(
        'the second message at the sink',
        () => (s.sink.messages.length >= 2 ? true : undefined),
        15_000,
      )
      await holdsUntil(
        Date.now() + 1_000,
        async () => s.sink.messages.length,
        (arrived) => expect(arrived, 'a third message sent before the first was recorded').toBe(2),
      )
      expect(await outboxStatusCounts(app, s.accountId)).toEqual({ sending: 2, queued: 1 })
    } finally {
      releaseHistory()
      await holding
    }
    await waitFor(
      'every message sent and recorded',
      async () => ((await outboxStatusCounts(app, s.accountId)).sent === 3 ? true : undefined),
      15_000,
    )
    expect(s.sink.messages).toHaveLength(3)
  })
})

describe('lanes that found nothing due', () => {
  it('send the mail queued while the run is under way together, as many at once as there are sessions', {
    timeout: 30_000,
  }, async () => {
    const s = await startSender(app, 'lane-parking', { plan: 'pro', behaviour: { dataDelayMs: 3_000 } })
    // The default lanes, not the single lane of the test before.
    await app.stopWorkers()
    await app.worker()
    // The run's first claim finds this one alone: every other lane finds nothing due.
    await enqueued(app, s.key, email({ to: 'first@example.com' }))
    await waitFor('the first message at the sink', () => (s.sink.receiving === 1 ? true : undefined), 15_000)
    // Long enough for every session to be opened while the first ones are still receiving.
    s.sink.setBehaviour({ dataDelayMs: 1_500 })
    for (let i = 0; i < 10; i++) await enqueued(app, s.key, email({ to: `later${i}@example.com` }))
    expect(s.sink.messages, 'the first message is still being received').toHaveLength(0)
    await s.sink.waitForMessages(11, 20_000)
    // The connection's five SMTP sessions: one lane left alone would have sent them one by one.
    expect(s.sink.mostReceivingAtOnce).toBe(5)
  })
})
