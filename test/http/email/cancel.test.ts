/**
 * POST /emails/{id}/cancel: a scheduled or queued email that no attempt has started ends
 * `canceled` and never reaches the SMTP server; any other answers 409 EMAIL_NOT_CANCELABLE with
 * its status; another account's answers 404. A cancel and a worker claiming the same email at
 * the same moment never both win.
 */
import { randomBytes } from 'node:crypto'
import { beforeAll, describe, expect, it } from 'vitest'
import { type TestApp, useTestApp } from '../../support/app.ts'
import { MINUTE } from '../../support/clock.ts'
import { TIMESTAMP } from '../../support/matchers.ts'
import { email, enqueued, waitFor } from '../../support/queue.ts'
import { apiAt, atLaterTime, cancelEmail, fromNow, getEmail, statusOf } from '../../support/scheduling.ts'
import { type Sender, startSender } from '../../support/sending.ts'

const app = useTestApp()
const BUSY = { code: 450, message: '4.2.1 Mailbox busy, try again later' }

let s: Sender
beforeAll(async () => {
  s = await startSender(app, 'cancel', {
    plan: 'pro',
    behaviour: { recipientReplies: { 'busy@example.com': BUSY } },
  })
  const hook = await app.request('/webhooks', {
    method: 'POST',
    key: s.key,
    body: { url: 'http://127.0.0.1:9/hook', events: ['email.canceled'] },
  })
  expect(hook.status).toBe(201)
})

function notCancelable(status: string) {
  return {
    status: 409,
    body: { code: 'EMAIL_NOT_CANCELABLE', message: expect.any(String), details: { status } },
  }
}

async function canceledEvents(id: number): Promise<unknown[]> {
  const rows = await app.services.sql<{ data: unknown }[]>`
    select data from webhook_events where type = 'email.canceled' and (data ->> 'outbox_id')::int = ${id}`
  return rows.map((r) => r.data)
}

const delivered = () => s.sink.messages.flatMap((m) => m.envelope.to)

describe('POST /emails/{id}/cancel', () => {
  it('cancels a scheduled email: it reads canceled, with its event, and never goes', async () => {
    const id = await enqueued(
      app,
      s.key,
      email({ to: 'scheduled@example.com', scheduled_at: fromNow(5 * MINUTE) }),
    )
    const reply = await cancelEmail(app, s.key, id)
    expect(reply.status, JSON.stringify(reply.body)).toBe(200)
    expect(reply.body.email).toMatchObject({ id, status: 'canceled', attempts: 0, next_attempt_at: null })
    expect(reply.body.email.history).toEqual([
      { type: 'scheduled', at: expect.stringMatching(TIMESTAMP) },
      { type: 'canceled', at: expect.stringMatching(TIMESTAMP) },
    ])
    expect(await canceledEvents(id)).toEqual([expect.objectContaining({ outbox_id: id, status: 'canceled' })])
    const listed = await app.request('/emails?status=canceled', { key: s.key })
    expect(((await listed.json()) as { emails: { id: number }[] }).emails.map((e) => e.id)).toContain(id)

    await atLaterTime(app, 10 * MINUTE, { connections: [s.connectionId] }, async (ahead) => {
      const api = apiAt(ahead)
      const after = await enqueued(api as TestApp, s.key, email({ to: 'after@example.com' }))
      await waitFor('the email sent after', async () =>
        (await statusOf(api, s.key, after)) === 'sent' ? true : undefined,
      )
      expect(await statusOf(api, s.key, id)).toBe('canceled')
    })
    expect(delivered()).not.toContain('scheduled@example.com')
  })

  it('cancels a queued email before any attempt, and its files’ bytes go', async () => {
    const id = await enqueued(
      app,
      s.key,
      email({
        to: 'queued@example.com',
        attachments: [{ filename: 'a.bin', content: randomBytes(64).toString('base64') }],
      }),
    )
    expect((await cancelEmail(app, s.key, id)).body.email?.status).toBe('canceled')
    const [kept] = await app.services.sql<{ n: number }[]>`
      select count(*)::int as n from outbox_attachment_contents where outbox_id = ${id}`
    expect(kept?.n).toBe(0)

    await app.worker()
    const after = await enqueued(app, s.key, email({ to: 'after-queued@example.com' }))
    await waitFor('the email sent after', async () =>
      (await statusOf(app, s.key, after)) === 'sent' ? true : undefined,
    )
    expect(delivered()).not.toContain('queued@example.com')
    expect(await statusOf(app, s.key, id)).toBe('canceled')
  })

  it('answers 409 with the status of a sent, a canceled and a deferred email', async () => {
    await app.worker()
    const sent = await enqueued(app, s.key, email())
    await waitFor('the send', async () => ((await statusOf(app, s.key, sent)) === 'sent' ? true : undefined))
    expect(await cancelEmail(app, s.key, sent)).toEqual(notCancelable('sent'))

    const twice = await enqueued(app, s.key, email({ scheduled_at: fromNow(MINUTE) }))
    expect((await cancelEmail(app, s.key, twice)).status).toBe(200)
    expect(await cancelEmail(app, s.key, twice)).toEqual(notCancelable('canceled'))

    // Tried once and deferred: an attempt has started, so it keeps its retries.
    const deferred = await enqueued(app, s.key, email({ to: 'busy@example.com' }))
    await waitFor('the deferral', async () => {
      const view = (await getEmail(app, s.key, deferred)).body.email
      return view.attempts >= 1 && view.status === 'queued' ? true : undefined
    })
    expect(await cancelEmail(app, s.key, deferred)).toEqual(notCancelable('queued'))
  })

  it('answers 404 for another account’s email and 400 for an ID that is not a number', async () => {
    const other = await startSender(app, 'cancel-other', { plan: 'pro' })
    const id = await enqueued(app, other.key, email({ scheduled_at: fromNow(MINUTE) }))
    const reply = await cancelEmail(app, s.key, id)
    expect({ status: reply.status, code: reply.body.code }).toEqual({
      status: 404,
      code: 'OUTBOX_RECORD_NOT_FOUND',
    })
    expect(await statusOf(app, other.key, id)).toBe('scheduled')
    expect((await cancelEmail(app, s.key, 'abc')).body.code).toBe('INVALID_ID')
    expect((await cancelEmail(app, s.key, 99_999_999_999)).status).toBe(404)
  })

  it('never both cancels and sends: each email is either canceled and absent, or sent and refused', async () => {
    const racer = await startSender(app, 'cancel-race', { plan: 'pro' })
    await app.worker()
    const ids = await Promise.all(
      Array.from({ length: 20 }, (_, i) => enqueued(app, racer.key, email({ to: `race${i}@example.com` }))),
    )
    const answers = await Promise.all(ids.map((id) => cancelEmail(app, racer.key, id)))
    const ended = await Promise.all(
      ids.map((id) =>
        waitFor(`email ${id} to end`, async () => {
          const status = await statusOf(app, racer.key, id)
          return status === 'sent' || status === 'canceled' ? status : undefined
        }),
      ),
    )
    const received = racer.sink.messages.flatMap((m) => m.envelope.to)
    ids.forEach((_, i) => {
      const to = `race${i}@example.com`
      if (answers[i]?.status === 200) {
        expect({ ended: ended[i], received: received.includes(to) }).toEqual({
          ended: 'canceled',
          received: false,
        })
      } else {
        expect(answers[i]?.status).toBe(409)
        expect({ ended: ended[i], received: received.includes(to) }).toEqual({
          ended: 'sent',
          received: true,
        })
      }
    })
  })
})
