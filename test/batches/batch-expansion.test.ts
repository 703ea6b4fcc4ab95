/**
 * A batch's recipients are stored at its creation and moved into the outbox by the worker in
 * chunks, a bounded distance ahead of delivery (members
 * are expanded inside PostgreSQL or in bounded chunks; total_count is right at creation). Whatever reads the batch stays right
 * while some recipients are not yet in the outbox: its counts and status, its end event, a
 * deletion of its connection, retention; and a worker killed mid-expansion, or two expansions at
 * once, lose and duplicate nobody.
 */
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it } from 'vitest'
import { batchFailures } from '../../src/batches/batches.ts'
import type { ExpansionPolicy } from '../../src/batches/expansion.ts'
import { deleteConnection, pauseConnection } from '../../src/connections/connections.ts'
import { queuedOnConnection } from '../../src/db/queue.ts'
import { purgeExpired } from '../../src/sending/retention.ts'
import { useTestApp } from '../support/app.ts'
import {
  addresses,
  audienceWith,
  type BatchView,
  batchOf,
  createdBatch,
  decodeMessage,
  expandNow,
  waitForBatch,
  waitForBatchEnd,
} from '../support/batches.ts'
import { mailroomEnv, spawnMailroom, waitFor } from '../support/queue.ts'
import { type Sender, startSender } from '../support/sending.ts'
import { useWebhookReceivers } from '../support/webhook-receiver.ts'

const app = useTestApp()
const startReceiver = useWebhookReceivers()
afterEach(() => app.stopWorkers())

/** A few recipients at a time, so that a small batch is expanded in many steps. */
const SMALL_STEPS: ExpansionPolicy = { chunk: 3, ahead: 4, recheckMs: 20, maxRecheckMs: 100 }

const template = { subject: 'Hello {{first_name}}', text_body: 'Hi {{first_name}}' }

/** Where the batch's recipients are: moved into the outbox, or still in its store. */
async function placement(batchId: number) {
  const [row] = await app.services.sql<
    { outbox: number; queued: number; stored: number; addresses: number; message_ids: number }[]
  >`
    select (select count(*) from outbox where batch_id = ${batchId})::int as outbox,
      (select count(*) from outbox where batch_id = ${batchId} and status = 'queued')::int as queued,
      (select coalesce(sum(jsonb_array_length(recipients)), 0) from batch_recipients where batch_id = ${batchId})::int as stored,
      (select count(distinct email) from (
         select to_addresses[1] as email from outbox where batch_id = ${batchId}
         union all select r ->> 0 from batch_recipients, jsonb_array_elements(recipients) r where batch_id = ${batchId}) a
      )::int as addresses,
      (select count(distinct message_id) from outbox where batch_id = ${batchId})::int as message_ids`
  if (!row) throw new Error('no placement')
  return row
}

/** An endpoint of the sender's account listening to `events`. */
async function endpointFor(s: Sender, events: string[]): Promise<void> {
  const receiver = await startReceiver()
  const res = await app.request('/webhooks', {
    method: 'POST',
    key: s.key,
    body: { url: receiver.url, events },
  })
  expect(res.status).toBe(201)
}

/** The account's recorded events of `type`, with their data. */
function eventsOf(accountId: number, type: string) {
  return app.services.sql<{ data: Record<string, unknown> }[]>`
    select data from webhook_events where account_id = ${accountId} and type = ${type} order by id`
}

async function audienceOfSize(s: Sender, size: number): Promise<number> {
  const audienceId = await audienceWith(app, s.key, [])
  await app.services.sql`
    insert into audience_members (audience_id, email, payload)
    select ${audienceId}, 'member' || i || '@example.com', jsonb_build_object('first_name', 'M' || i)
    from generate_series(1, ${size}::int) as i`
  return audienceId
}

describe('at creation', () => {
  it('total_count is right before any recipient is in the outbox; members added or removed later change nothing', {
    timeout: 60_000,
  }, async () => {
    const s = await startSender(app, 'store-created', { plan: 'pro' })
    const members = addresses('member', 12).map((email, i) => ({ email, payload: { first_name: `N${i}` } }))
    const audienceId = await audienceWith(app, s.key, members)
    const id = await createdBatch(app, s.key, { template, audience_id: audienceId })

    // No worker yet: nothing has been moved, and the batch already knows its size.
    expect(await batchOf(app, s.key, id)).toMatchObject({
      status: 'pending',
      total_count: 12,
      sent_count: 0,
      failed_count: 0,
      progress: 0,
    })
    expect(await placement(id)).toMatchObject({ outbox: 0, stored: 12 })
    // Deleting the connection now would fail them all.
    expect(await queuedOnConnection(app.services.sql, s.accountId, s.connectionId)).toBe(12)

    const listed = await app.request(`/audiences/${audienceId}/members`, { key: s.key })
    const first = ((await listed.json()) as { members: { id: number; email: string }[] }).members[0]
    expect(first?.email).toBe('member0@example.com')
    const removed = await app.request(`/audiences/${audienceId}/members/${first?.id}`, {
      method: 'DELETE',
      key: s.key,
    })
    expect(removed.status).toBe(200)
    const added = await app.request(`/audiences/${audienceId}/members`, {
      method: 'POST',
      key: s.key,
      body: { members: [{ email: 'late@example.com' }] },
    })
    expect(added.status).toBe(201)

    await app.worker({ expansion: SMALL_STEPS })
    expect(await waitForBatchEnd(app, s.key, id, 30_000)).toMatchObject({
      status: 'completed',
      total_count: 12,
      sent_count: 12,
    })
    const received = s.sink.messages.map((m) => m.envelope.to[0]).sort()
    expect(received).toEqual(members.map((m) => m.email).sort())
    const zero = s.sink.messages.find((m) => m.envelope.to[0] === 'member0@example.com')
    expect(decodeMessage(zero?.raw ?? '').subject).toBe('Hello N0')
  })

  it('retention keeps the content of a batch whose recipients are all still stored', {
    timeout: 60_000,
  }, async () => {
    const s = await startSender(app, 'store-retention', { plan: 'pro' })
    const id = await createdBatch(app, s.key, { template, recipients: addresses('kept', 3) })
    await purgeExpired(app.services.sql)
    await app.worker({ expansion: SMALL_STEPS })
    expect(await waitForBatchEnd(app, s.key, id, 30_000)).toMatchObject({
      status: 'completed',
      sent_count: 3,
    })
    expect(s.sink.messages.map((m) => decodeMessage(m.raw).subject)).toEqual(['Hello ', 'Hello ', 'Hello '])
  })
})

describe('while it is expanded', () => {
  it('the outbox holds at most `ahead` of its records queued; progress never says done early; one end event after the last', {
    timeout: 60_000,
  }, async () => {
    const TOTAL = 25
    const s = await startSender(app, 'store-steps', { plan: 'pro', behaviour: { dataDelayMs: 10 } })
    await endpointFor(s, ['batch.completed', 'batch.failed'])
    const id = await createdBatch(app, s.key, { template, recipients: addresses('step', TOTAL) })
    // Two moved first, the next look well later: those two are sent and settled while the rest
    // is still stored, and their batch has not ended. (The run asked for at creation is removed:
    // this one stands for it.)
    await app.services.sql`select graphile_worker.remove_job(${`batch:${id}`})`
    await expandNow(app, id, { ...SMALL_STEPS, chunk: 2, ahead: 2, recheckMs: 5_000 })
    await app.worker({ expansion: SMALL_STEPS })
    const twoSent = await waitForBatch(app, s.key, id, (b) => b.sent_count === 2, 30_000)
    expect(twoSent).toMatchObject({ status: 'running', progress: 8 })
    expect((await placement(id)).stored).toBe(TOTAL - 2)
    await sleep(200)
    expect(await eventsOf(s.accountId, 'batch.completed')).toEqual([])

    const views: BatchView[] = []
    let mostQueued = 0
    let view: BatchView
    do {
      view = await batchOf(app, s.key, id)
      views.push(view)
      mostQueued = Math.max(mostQueued, (await placement(id)).queued)
    } while (view.status === 'pending' || view.status === 'running')

    expect(view).toMatchObject({ status: 'completed', total_count: TOTAL, sent_count: TOTAL, progress: 100 })
    expect(mostQueued).toBeGreaterThan(0)
    expect(mostQueued).toBeLessThanOrEqual(SMALL_STEPS.ahead)
    // Every view before the end: fewer handled than total, below 100.
    const early = views
      .slice(0, -1)
      .filter((v) => v.sent_count + v.failed_count >= TOTAL || v.progress >= 100)
    expect(early).toEqual([])
    expect(new Set(s.sink.messages.map((m) => m.envelope.to[0])).size).toBe(TOTAL)

    await sleep(300)
    const ends = await eventsOf(s.accountId, 'batch.completed')
    expect(ends.map((e) => e.data)).toEqual([
      expect.objectContaining({ batch_id: id, total_count: TOTAL, sent_count: TOTAL, failed_count: 0 }),
    ])
    expect(await eventsOf(s.accountId, 'batch.failed')).toEqual([])
  })

  it('moves whole chunks: the queue is topped up once a chunk has drained, not by whatever drained meanwhile', {
    timeout: 60_000,
  }, async () => {
    const CHUNK = 10
    const TOTAL = 30 * CHUNK
    const s = await startSender(app, 'whole-chunks', { plan: 'pro' })
    const id = await createdBatch(app, s.key, { template, recipients: addresses('chunk', TOTAL) })
    await app.worker({ expansion: { chunk: CHUNK, ahead: 2 * CHUNK, recheckMs: 20, maxRecheckMs: 100 } })
    expect(await waitForBatchEnd(app, s.key, id, 30_000)).toMatchObject({
      status: 'completed',
      sent_count: TOTAL,
    })
    // A step's records share its transaction's created_at.
    const steps = await app.services.sql<{ moved: number }[]>`
      select count(*)::int as moved from outbox where batch_id = ${id} group by created_at order by min(id)`
    expect(steps.map((step) => step.moved)).toEqual(Array(TOTAL / CHUNK).fill(CHUNK))
  })

  it('a connection deleted mid-expansion fails the recipients still stored with `connection deleted`, each with its event, and the batch ends once', {
    timeout: 60_000,
  }, async () => {
    const TOTAL = 20
    const s = await startSender(app, 'store-delconn', { plan: 'pro' })
    await endpointFor(s, ['email.failed', 'batch.completed', 'batch.failed'])
    const id = await createdBatch(app, s.key, { template, recipients: addresses('gone', TOTAL) })
    // Five moved (nothing sends them: no worker), fifteen still stored.
    await expandNow(app, id, { ...SMALL_STEPS, chunk: 5, ahead: 5 })
    expect(await placement(id)).toMatchObject({ outbox: 5, queued: 5, stored: 15 })
    expect(await queuedOnConnection(app.services.sql, s.accountId, s.connectionId)).toBe(TOTAL)

    await deleteConnection(app.services.sql, s.connectionId)
    // The five queued fail at once; the batch has not ended while fifteen are stored.
    expect(await batchOf(app, s.key, id)).toMatchObject({ status: 'running', failed_count: 5 })
    expect(await eventsOf(s.accountId, 'batch.failed')).toEqual([])

    await app.worker({ expansion: SMALL_STEPS })
    expect(await waitForBatchEnd(app, s.key, id, 30_000)).toMatchObject({
      status: 'failed',
      total_count: TOTAL,
      sent_count: 0,
      failed_count: TOTAL,
      progress: 100,
    })
    expect(await placement(id)).toMatchObject({ outbox: TOTAL, stored: 0, addresses: TOTAL })
    const failures = await batchFailures(app.services.sql, id)
    expect(failures.map((f) => f.error)).toEqual(Array(TOTAL).fill('connection deleted'))
    expect(s.sink.messages).toEqual([])

    await sleep(300)
    const failedEvents = await eventsOf(s.accountId, 'email.failed')
    expect(failedEvents.map((e) => e.data.to).sort()).toEqual(
      addresses('gone', TOTAL)
        .map((a) => [a])
        .sort(),
    )
    expect(failedEvents.every((e) => e.data.error === 'connection deleted')).toBe(true)
    expect((await eventsOf(s.accountId, 'batch.failed')).map((e) => e.data)).toEqual([
      expect.objectContaining({ batch_id: id, sent_count: 0, failed_count: TOTAL }),
    ])
  })

  it('a batch whose expansion run was lost (graphile-worker gave up on it) is moved on by the sweep', {
    timeout: 60_000,
  }, async () => {
    const s = await startSender(app, 'store-stranded', { plan: 'pro' })
    const members = addresses('stranded', 5).map((email) => ({ email }))
    const id = await createdBatch(app, s.key, {
      template,
      audience_id: await audienceWith(app, s.key, members),
    })
    await app.services.sql`select graphile_worker.remove_job(${`batch:${id}`})`
    // Longer ago than the sweep's grace, as a run given up on after its retries would be.
    await app.services.sql`update batches set created_at = now() - interval '1 hour' where id = ${id}`
    // A worker's sweep, at its start and every heartbeat, asks for the run nothing else would.
    await app.worker()
    expect(await waitForBatchEnd(app, s.key, id, 30_000)).toMatchObject({
      status: 'completed',
      sent_count: 5,
    })
    expect(await placement(id)).toMatchObject({ outbox: 5, stored: 0 })
  })
})

describe('crashes and concurrency', () => {
  it('kill -9 of a worker process mid-expansion, then two expansions at once: every recipient in the outbox exactly once, in order', {
    timeout: 120_000,
  }, async () => {
    const TOTAL = 12_000
    const s = await startSender(app, 'store-crash', { plan: 'pro' })
    // Nothing is sent: the expansion alone is under test.
    await pauseConnection(app.services.sql, s.connectionId)
    const audienceId = await audienceOfSize(s, TOTAL)
    const id = await createdBatch(app, s.key, { template, audience_id: audienceId })

    const worker = spawnMailroom(['start', '--worker-only'], mailroomEnv(app.db.url))
    try {
      await waitFor(
        () => `a first chunk moved by the worker process (output: ${worker.output()})`,
        async () => ((await placement(id)).outbox > 0 ? true : undefined),
        30_000,
        5,
      )
    } finally {
      const exited = once(worker.child, 'exit')
      worker.child.kill('SIGKILL')
      await exited
    }
    const atKill = await placement(id)
    expect(atKill.outbox).toBeGreaterThan(0)
    expect(atKill.outbox + atKill.stored).toBe(TOTAL)
    expect(atKill.addresses).toBe(TOTAL)

    // As the job run again after the crash would, twice at once (two worker processes).
    const policy = { ...SMALL_STEPS, chunk: 700, ahead: TOTAL }
    await Promise.all([expandNow(app, id, policy), expandNow(app, id, policy)])
    expect(await placement(id)).toEqual({
      outbox: TOTAL,
      queued: TOTAL,
      stored: 0,
      addresses: TOTAL,
      message_ids: TOTAL,
    })
    // In the audience's order.
    const [order] = await app.services.sql<{ in_order: boolean }[]>`
      select bool_and(to_addresses[1] = 'member' || n || '@example.com') as in_order
      from (select to_addresses, row_number() over (order by id) as n from outbox where batch_id = ${id}) o`
    expect(order?.in_order).toBe(true)
    expect(await batchOf(app, s.key, id)).toMatchObject({ status: 'pending', total_count: TOTAL })
  })
})
