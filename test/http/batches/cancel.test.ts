/**
 * POST /batches/{id}/cancel, and batches with scheduled_at: a scheduled batch stays pending until
 * its time, then is expanded and sent; a batch canceled while it runs keeps what was sent, its
 * other emails end canceled and never reach the SMTP server, and it ends canceled at progress
 * 100, deletable; any other state answers 409 BATCH_NOT_CANCELABLE, another account's 404.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { deleteConnection } from '../../../src/connections/connections.ts'
import { type TestApp, useTestApp } from '../../support/app.ts'
import {
  addresses,
  BATCH_NOT_FOUND,
  batchOf,
  createdBatch,
  deleteBatch,
  expandNow,
  standard,
  waitForBatch,
  waitForBatchEnd,
} from '../../support/batches.ts'
import { HOUR, MINUTE } from '../../support/clock.ts'
import { validationBody } from '../../support/matchers.ts'
import { waitFor } from '../../support/queue.ts'
import { apiAt, atLaterTime, cancelBatch, cancelEmail, fromNow } from '../../support/scheduling.ts'
import { type Sender, startSender } from '../../support/sending.ts'

const app = useTestApp()

const template = { subject: 'News', text_body: 'Hello' }
const BUSY = { code: 450, message: '4.2.1 Mailbox busy, try again later' }

async function eventsOf(type: string, batchId: number): Promise<unknown[]> {
  const rows = await app.services.sql<{ data: unknown }[]>`
    select data from webhook_events where type = ${type} and (data ->> 'batch_id')::int = ${batchId}`
  return rows.map((r) => r.data)
}

async function statuses(batchId: number): Promise<Record<string, number>> {
  const rows = await app.services.sql<{ status: string; n: number }[]>`
    select status, count(*)::int as n from outbox where batch_id = ${batchId} group by status`
  return Object.fromEntries(rows.map((r) => [r.status, r.n]))
}

async function sender(label: string, rate?: number): Promise<Sender> {
  const s = await startSender(app, label, { plan: 'pro', ...(rate === undefined ? {} : { rate }) })
  const hook = await app.request('/webhooks', {
    method: 'POST',
    key: s.key,
    body: { url: 'http://127.0.0.1:9/hook', events: ['batch.canceled', 'batch.completed', 'email.canceled'] },
  })
  expect(hook.status).toBe(201)
  return s
}

describe('a batch with scheduled_at', () => {
  let s: Sender
  beforeAll(async () => {
    s = await sender('batch-scheduled')
  })

  it('stays pending with nothing queued until its time, then is expanded and sent', async () => {
    const at = fromNow(20 * MINUTE, '+02:00')
    const id = await createdBatch(app, s.key, {
      template,
      recipients: addresses('sched', 3),
      scheduled_at: at,
    })
    const pending = await batchOf(app, s.key, id)
    expect(pending).toMatchObject({
      status: 'pending',
      progress: 0,
      scheduled_at: new Date(at).toISOString().slice(0, 19).replace('T', ' '),
    })
    // An expansion run before its time moves nothing.
    await expandNow(app, id)
    expect(await statuses(id)).toEqual({})

    await atLaterTime(app, 21 * MINUTE, { batches: [id] }, async (ahead) => {
      const done = await waitForBatchEnd(apiAt(ahead) as TestApp, s.key, id)
      expect(done).toMatchObject({ status: 'completed', sent_count: 3, progress: 100 })
    })
    expect(s.sink.messages.flatMap((m) => m.envelope.to).sort()).toEqual(addresses('sched', 3).sort())
  })

  it('schedules each email of an `emails` batch, pending while one waits and another is canceled', async () => {
    const id = await createdBatch(app, s.key, {
      emails: [
        { to: 'one@example.com', ...template },
        { to: 'two@example.com', ...template },
      ],
      scheduled_at: fromNow(MINUTE),
    })
    expect((await batchOf(app, s.key, id)).status).toBe('pending')
    const listed = await app.request(`/emails?batch_id=${id}&status=scheduled`, { key: s.key })
    const emails = ((await listed.json()) as { emails: { id: number }[] }).emails
    expect(emails).toHaveLength(2)
    expect((await cancelEmail(app, s.key, emails[0]?.id as number)).status).toBe(200)
    expect(await batchOf(app, s.key, id)).toMatchObject({ status: 'pending', progress: 50 })
  })

  it('fails at once when its connection is deleted before its time', async () => {
    const doomed = await sender('batch-doomed')
    const id = await createdBatch(app, doomed.key, {
      template,
      recipients: addresses('doomed', 2),
      scheduled_at: fromNow(HOUR),
    })
    await app.worker()
    await deleteConnection(app.services.sql, doomed.connectionId)
    const ended = await waitForBatchEnd(app, doomed.key, id)
    expect(ended).toMatchObject({ status: 'failed', failed_count: 2, progress: 100 })
  })

  it('refuses a time in the past or more than 30 days ahead', async () => {
    for (const [at, code] of [
      [fromNow(-MINUTE), 'too_small'],
      [fromNow(31 * 24 * 60 * MINUTE), 'too_big'],
    ] as const) {
      const reply = await app.request('/send/batch', {
        method: 'POST',
        key: s.key,
        body: { template, recipients: ['a@example.com'], scheduled_at: at },
      })
      expect({ status: reply.status, body: await reply.json() }).toEqual({
        status: 400,
        body: validationBody([{ path: ['scheduled_at'], code }]),
      })
    }
  })
})

describe('POST /batches/{id}/cancel', () => {
  it('stops a running batch: sent stays sent, the rest end canceled and never go', async () => {
    // One message a minute: the first goes, the others wait for the pace.
    const s = await sender('batch-running', 1)
    await app.worker()
    const id = await createdBatch(app, s.key, { template, recipients: addresses('run', 4) })
    await waitForBatch(app, s.key, id, (b) => b.status === 'running' && b.sent_count === 1)

    const reply = await cancelBatch(app, s.key, id)
    expect(reply.status, JSON.stringify(reply.body)).toBe(200)
    expect(reply.body.batch).toMatchObject({ id, status: 'canceled', sent_count: 1, progress: 100 })
    expect(await statuses(id)).toEqual({ sent: 1, canceled: 3 })
    expect(await eventsOf('batch.canceled', id)).toEqual([
      expect.objectContaining({ batch_id: id, status: 'canceled', sent_count: 1, total_count: 4 }),
    ])
    expect(await eventsOf('email.canceled', id)).toHaveLength(3)

    // Long after the pace would have let them go, nothing more reached the server.
    await atLaterTime(app, 10 * MINUTE, { connections: [s.connectionId] }, async (ahead) => {
      const view = await batchOf(apiAt(ahead) as TestApp, s.key, id)
      expect(view).toMatchObject({ status: 'canceled', sent_count: 1 })
    })
    expect(s.sink.messages).toHaveLength(1)
    expect(await eventsOf('batch.completed', id)).toEqual([])
    expect(await deleteBatch(app, s.key, id)).toEqual({
      status: 200,
      body: { success: true, message: 'Batch deleted' },
    })
  })

  it('stays canceled, with no end event, when an email tried before the cancel is sent after it', async () => {
    const s = await sender('batch-retrying')
    s.sink.setBehaviour({ recipientReplies: { 'busy@example.com': BUSY } })
    await app.worker()
    const id = await createdBatch(app, s.key, {
      template,
      recipients: ['busy@example.com', 'ok@example.com'],
    })
    await waitForBatch(app, s.key, id, (b) => b.sent_count === 1)
    await waitFor('the deferral', async () => ((await statuses(id)).queued === 1 ? true : undefined))

    // Tried once already, it keeps its retries; the batch ends canceled at once.
    expect((await cancelBatch(app, s.key, id)).body.batch).toMatchObject({
      status: 'canceled',
      progress: 100,
    })
    s.sink.setBehaviour({ recipientReplies: {} })
    await waitFor('the retried email to end', async () => {
      const now = await statuses(id)
      return now.queued || now.sending ? undefined : true
    })
    expect(await statuses(id)).toEqual({ sent: 2 })
    expect((await batchOf(app, s.key, id)).status).toBe('canceled')
    expect(await eventsOf('batch.completed', id)).toEqual([])
    expect(await eventsOf('batch.canceled', id)).toHaveLength(1)
  })

  it('stops a scheduled batch before its time: its recipients are never queued', async () => {
    const s = await sender('batch-pending')
    const id = await createdBatch(app, s.key, {
      template,
      recipients: addresses('pend', 3),
      scheduled_at: fromNow(5 * MINUTE),
    })
    expect((await cancelBatch(app, s.key, id)).body.batch).toMatchObject({
      status: 'canceled',
      progress: 100,
    })
    await atLaterTime(app, 6 * MINUTE, { batches: [id] }, async (ahead) => {
      await waitFor('the expansion run', async () => {
        const [row] = await ahead.services.sql<{ n: number }[]>`
          select count(*)::int as n from graphile_worker.jobs where key = ${`batch:${id}`}`
        return row?.n === 0 ? true : undefined
      })
    })
    expect(await statuses(id)).toEqual({})
    expect(s.sink.messages).toHaveLength(0)
  })

  it('answers 409 BATCH_NOT_CANCELABLE with the status of an ended batch', async () => {
    const s = await sender('batch-ended')
    await app.worker()
    const id = await createdBatch(app, s.key, { template, recipients: ['end@example.com'] })
    await waitForBatchEnd(app, s.key, id)
    expect(await cancelBatch(app, s.key, id)).toEqual(
      standard(409, 'BATCH_NOT_CANCELABLE', { status: 'completed' }),
    )
    const canceled = await createdBatch(app, s.key, {
      template,
      recipients: ['c@example.com'],
      scheduled_at: fromNow(MINUTE),
    })
    await cancelBatch(app, s.key, canceled)
    expect(await cancelBatch(app, s.key, canceled)).toEqual(
      standard(409, 'BATCH_NOT_CANCELABLE', { status: 'canceled' }),
    )
  })

  it('answers 404 for another account’s batch', async () => {
    const owner = await sender('batch-owner')
    const intruder = await sender('batch-intruder')
    const id = await createdBatch(app, owner.key, {
      template,
      recipients: ['x@example.com'],
      scheduled_at: fromNow(MINUTE),
    })
    expect(await cancelBatch(app, intruder.key, id)).toEqual(BATCH_NOT_FOUND)
    expect((await batchOf(app, owner.key, id)).status).toBe('pending')
  })
})
