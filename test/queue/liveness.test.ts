/**
 * A connection's queue keeps running whatever became of one of its graphile-worker jobs: a run
 * that graphile-worker gave up on (attempts used up) keeps its key, and neither a new enqueue
 * nor the liveness sweep may take that dead job for a run still coming. And a message claimed in
 * a live process's name that the process lost track of goes back to the queue.
 */
import { describe, expect, it } from 'vitest'
import { registerProcess } from '../../src/db/worker-processes.ts'
import { beatAndSweep, Claimant, HEARTBEAT_MS } from '../../src/queue/liveness.ts'
import { useTestApp } from '../support/app.ts'
import { enqueued, waitForOutboxStatus } from '../support/queue.ts'
import { type Sender, startSender } from '../support/sending.ts'

// A database of its own for each test: the sweep must find only that test's stranded mail.
const app = useTestApp({}, { each: true })

/** Makes the connection's queue-run job one graphile-worker has failed permanently. */
async function killQueueRun(s: Sender): Promise<void> {
  const dead = await app.services.sql`
    update graphile_worker._private_jobs set attempts = max_attempts, last_error = 'gave up'
    where key = ${`queue:${s.connectionId}`} returning id`
  expect(dead).toHaveLength(1)
}

describe('a queue run graphile-worker gave up on', () => {
  it('does not stop a later enqueue from getting a run of its own', async () => {
    const s = await startSender(app, 'dead-run', { plan: 'pro' })
    const first = await enqueued(app, s.key)
    await killQueueRun(s)
    const second = await enqueued(app, s.key)
    await app.worker()
    await waitForOutboxStatus(app, s.accountId, first, 'sent')
    await waitForOutboxStatus(app, s.accountId, second, 'sent')
    expect(s.sink.messages).toHaveLength(2)
  })

  it('is not taken for a run coming: the liveness sweep gives the stranded mail a run', async () => {
    const s = await startSender(app, 'dead-run', { plan: 'pro' })
    const id = await enqueued(app, s.key)
    await killQueueRun(s)
    await app.worker()
    // Due mail is stranded once it has waited a heartbeat with no run coming; the sweep runs
    // every heartbeat.
    await waitForOutboxStatus(app, s.accountId, id, 'sent', 20_000)
    expect(s.sink.messages).toHaveLength(1)
  })
})

describe('a claim its own live process lost track of', () => {
  it('is queued again by that process’s sweep once a heartbeat old; held or newer claims are not', async () => {
    const s = await startSender(app, 'lost-claim', { plan: 'pro' })
    const [lost, held, fresh] = [
      await enqueued(app, s.key),
      await enqueued(app, s.key),
      await enqueued(app, s.key),
    ]
    const claimant = new Claimant()
    await registerProcess(app.services.sql, claimant.id)
    // As when a claim commits but its answer is lost with the database connection: claimed in
    // the process's name, which never went on to send it.
    const claim = (id: number, agoMs: number) => app.services.sql`
      update outbox set status = 'sending', claimed_by = ${claimant.id}, attempts = attempts + 1,
        updated_at = now() - ${agoMs} * interval '1 millisecond'
      where id = ${id}`
    await claim(lost, 2 * HEARTBEAT_MS)
    await claim(held, 2 * HEARTBEAT_MS)
    claimant.messages.hold(held)
    await claim(fresh, 0)

    await beatAndSweep(app.services.sql, claimant)
    const status = async (id: number) =>
      (
        await app.services.sql<{ status: string; claimed_by: string | null }[]>`
        select status, claimed_by from outbox where id = ${id}`
      )[0]
    expect(await status(lost)).toEqual({ status: 'queued', claimed_by: null })
    expect(await status(held)).toEqual({ status: 'sending', claimed_by: claimant.id })
    expect(await status(fresh)).toEqual({ status: 'sending', claimed_by: claimant.id })

    // And it goes out with the next run the sweep asked for, once.
    await app.worker()
    await waitForOutboxStatus(app, s.accountId, lost, 'sent', 20_000)
    expect(s.sink.messages).toHaveLength(1)
  })
})

describe('a webhook delivery its own live process lost track of', () => {
  it('is put back by that process’s sweep once a heartbeat old; a held or newer one is not', async () => {
    const s = await startSender(app, 'lost-delivery', { plan: 'pro' })
    const hook = await app.request('/webhooks', {
      key: s.key,
      body: { url: 'http://127.0.0.1:9/hooks', events: ['email.sent'] },
    })
    expect(hook.status).toBe(201)
    for (let i = 0; i < 3; i++) {
      const sent = await app.request('/send', {
        key: s.key,
        body: { to: 'ann@example.com', subject: 'Hi', text_body: 'x' },
      })
      expect(sent.status).toBe(200)
    }
    const deliveries = await app.services.sql<{ id: number }[]>`select id from webhook_deliveries order by id`
    const [lost, held, fresh] = deliveries.map((d) => d.id) as [number, number, number]
    const claimant = new Claimant()
    await registerProcess(app.services.sql, claimant.id)
    const claim = (id: number, agoMs: number) => app.services.sql`
      update webhook_deliveries set status = 'sending', claimed_by = ${claimant.id}, attempts = attempts + 1,
        claimed_at = now() - ${agoMs} * interval '1 millisecond'
      where id = ${id}`
    await claim(lost, 2 * HEARTBEAT_MS)
    await claim(held, 2 * HEARTBEAT_MS)
    claimant.deliveries.hold(held)
    await claim(fresh, 0)

    await beatAndSweep(app.services.sql, claimant)
    const status = async (id: number) =>
      (
        await app.services.sql<{ status: string; claimed_by: string | null }[]>`
        select status, claimed_by from webhook_deliveries where id = ${id}`
      )[0]
    expect(await status(lost)).toEqual({ status: 'pending', claimed_by: null })
    expect(await status(held)).toEqual({ status: 'sending', claimed_by: claimant.id })
    expect(await status(fresh)).toEqual({ status: 'sending', claimed_by: claimant.id })
  })
})
