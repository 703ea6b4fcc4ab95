/**
 * A connection's queue run hands its worker slot on once its slice is over, and its next run
 * waits behind the runs already asked for: with more connections holding mail than the worker has
 * slots, mail queued on another connection is sent before the busy ones have sent theirs, and a
 * run asked for by new mail goes before every run of a connection that used its whole slice, and
 * before a batch's.
 */
import { describe, expect, it } from 'vitest'
import { seedAccount, useTestApp } from '../support/app.ts'
import { addresses, createdBatch } from '../support/batches.ts'
import { email, enqueued, waitFor } from '../support/queue.ts'
import { type Sender, senderAddress, startSender } from '../support/sending.ts'

const app = useTestApp({}, { each: true })

const BUSY_MESSAGES = 30

/** Another account with a connection to `s`'s sink, so that the sink's order is the sending order. */
function neighbour(s: Sender, label: string) {
  return seedAccount(app, {
    plan: 'pro',
    connection: { ...s.sink.login, from: senderAddress(label), rate: 6000 },
  })
}

const subjects = (s: Sender) => s.sink.messages.map((m) => m.headers.get('subject'))

/** Waits until `s`'s sink holds `count` messages, every one the test sent. */
const allArrived = (s: Sender, count: number) =>
  waitFor('every message at the sink', () => (s.sink.messages.length === count ? true : undefined), 30_000)

describe('queue runs share the worker slots', () => {
  it('mail queued on another connection goes out before busy connections have sent all of theirs', {
    timeout: 60_000,
  }, async () => {
    // Three connections to one sink, so that its arrival order is the order they were sent in.
    const busy = await startSender(app, 'busy', { plan: 'pro' })
    const other = await neighbour(busy, 'other')
    const second = await neighbour(busy, 'second')
    for (let i = 0; i < BUSY_MESSAGES; i++) {
      await enqueued(app, busy.key, email({ subject: `busy ${i}` }))
      await enqueued(app, second.key, email({ subject: `second ${i}` }))
    }
    // Queued last, on a connection of its own: its run is asked for after both busy ones.
    await enqueued(app, other.key, email({ subject: 'late' }))
    // One slot for three connections; a slice of no time: each run hands on after its first round.
    await app.worker({ concurrency: 1, lanes: 2, queueSliceMs: 0 })
    await allArrived(busy, 2 * BUSY_MESSAGES + 1)
    const arrived = subjects(busy)
    const lateAt = arrived.indexOf('late')
    expect(lateAt).toBeGreaterThanOrEqual(0)
    expect(lateAt).toBeLessThan(arrived.lastIndexOf(`busy ${BUSY_MESSAGES - 1}`))
    expect(lateAt).toBeLessThan(arrived.lastIndexOf(`second ${BUSY_MESSAGES - 1}`))
    // Both busy connections took turns rather than one sending all of its mail first.
    const firstOf = (prefix: string) => arrived.findIndex((s) => s?.startsWith(prefix))
    const lastOf = (prefix: string) => arrived.findLastIndex((s) => s?.startsWith(prefix))
    expect(firstOf('second')).toBeLessThan(lastOf('busy'))
    expect(firstOf('busy')).toBeLessThan(lastOf('second'))
  })

  it('a run that hands on goes behind a run asked for after its own next one', {
    timeout: 60_000,
  }, async () => {
    const busy = await startSender(app, 'busy', { plan: 'pro', behaviour: { dataDelayMs: 1_000 } })
    const other = await neighbour(busy, 'other')
    await app.worker({ concurrency: 1, lanes: 1, queueSliceMs: 0 })
    await enqueued(app, busy.key, email({ subject: 'busy 0' }))
    await waitFor('the first run to be sending', () => (busy.sink.receiving > 0 ? true : undefined))
    // Queued while the run is under way: the connection's next run is asked for now, before the
    // other connection's.
    await enqueued(app, busy.key, email({ subject: 'busy 1' }))
    await enqueued(app, busy.key, email({ subject: 'busy 2' }))
    await enqueued(app, other.key, email({ subject: 'late' }))
    await allArrived(busy, 4)
    expect(subjects(busy)).toEqual(['busy 0', 'late', 'busy 1', 'busy 2'])
  })

  it('a run asked for by new mail goes before the runs of connections that used their whole slice', {
    timeout: 60_000,
  }, async () => {
    // Four connections to one sink; each message takes half a second, so that 'late' is queued
    // while the first busy connection's second run is sending.
    const a = await startSender(app, 'busy', { plan: 'pro', behaviour: { dataDelayMs: 500 } })
    const b = await neighbour(a, 'b')
    const c = await neighbour(a, 'c')
    const other = await neighbour(a, 'other')
    for (let i = 0; i < 3; i++) {
      for (const [s, label] of [
        [a, 'a'],
        [b, 'b'],
        [c, 'c'],
      ] as const) {
        await enqueued(app, s.key, email({ subject: `${label} ${i}` }))
      }
    }
    await app.worker({ concurrency: 1, lanes: 1, queueSliceMs: 0 })
    // Each busy connection has had its first run and handed on, b's and c's next runs waiting
    // since before 'late' is queued.
    await waitFor('each busy connection to have sent once', () =>
      a.sink.messages.length >= 3 ? true : undefined,
    )
    await enqueued(app, other.key, email({ subject: 'late' }))
    await allArrived(a, 10)
    const arrived = subjects(a)
    expect(arrived.slice(0, 3).sort()).toEqual(['a 0', 'b 0', 'c 0'])
    expect(arrived.indexOf('late')).toBeLessThan(arrived.indexOf('b 1'))
    expect(arrived.indexOf('late')).toBeLessThan(arrived.indexOf('c 1'))
  })

  it('a batch’s run waits behind a run asked for by new mail after it', { timeout: 60_000 }, async () => {
    // Every message takes half a second at the sink, so that 'late' is queued while 'slow' is sent.
    const slow = await startSender(app, 'slow', { plan: 'pro', behaviour: { dataDelayMs: 500 } })
    const batcher = await neighbour(slow, 'batcher')
    const other = await neighbour(slow, 'other')
    const template = { subject: 'Batch {{first_name}}', text_body: 'Hi' }
    // The expansion's job first, then 'slow''s run: the expansion asks for the batch's run before
    // 'slow' is sent, and 'late' is queued after that.
    await createdBatch(app, batcher.key, { template, recipients: addresses('member', 3) })
    await enqueued(app, slow.key, email({ subject: 'slow' }))
    await app.worker({ concurrency: 1 })
    await waitFor('slow to be sending', () => (slow.sink.receiving > 0 ? true : undefined))
    await enqueued(app, other.key, email({ subject: 'late' }))
    await allArrived(slow, 5)
    const arrived = subjects(slow)
    expect(arrived.slice(0, 2)).toEqual(['slow', 'late'])
  })

  it('a paced connection with mail waiting for its next token asks for its next run as a backlog', {
    timeout: 60_000,
  }, async () => {
    // Sixty a minute: a burst of ten, then one a second; the rest waits for tokens.
    const paced = await startSender(app, 'paced', { plan: 'pro', rate: 60 })
    for (let i = 0; i < 14; i++) await enqueued(app, paced.key, email({ subject: `paced ${i}` }))
    await app.worker({ concurrency: 1, queueSliceMs: 60_000 })
    const waitingRun = async () => {
      const [job] = await app.services.sql<{ priority: number }[]>`
        select priority from graphile_worker.jobs
        where key = ${`queue:${paced.connectionId}`} and locked_at is null and run_at > now()`
      return job
    }
    const job = await waitFor('the run waiting for a token', waitingRun, 20_000)
    expect(job.priority).toBe(1)
  })

  it('a paced connection waiting for its next token hands its slot on meanwhile', {
    timeout: 60_000,
  }, async () => {
    // Sixty a minute: a burst of ten, then one a second.
    const paced = await startSender(app, 'paced', { plan: 'pro', rate: 60 })
    const other = await neighbour(paced, 'other')
    for (let i = 0; i < 14; i++) await enqueued(app, paced.key, email({ subject: `paced ${i}` }))
    await enqueued(app, other.key, email({ subject: 'late' }))
    // One slot, and a slice long enough that only the waits can hand it on.
    await app.worker({ concurrency: 1, queueSliceMs: 60_000 })
    await allArrived(paced, 15)
    const arrived = subjects(paced)
    expect(arrived.indexOf('late')).toBeLessThan(arrived.indexOf('paced 13'))
  })
})
