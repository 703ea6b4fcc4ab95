/**
 * POST /enqueue with scheduled_at: the bounds of the time, the email reading `scheduled` until
 * it is due (GET, the list's filter, its history), absent from the SMTP server before its time and
 * delivered after, moved by PATCH /emails/{id}; and /send, which sends now, refusing it.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { pauseConnection, resumeConnection } from '../../../src/connections/connections.ts'
import { useTestApp } from '../../support/app.ts'
import { HOUR, MINUTE } from '../../support/clock.ts'
import { TIMESTAMP, validationBody } from '../../support/matchers.ts'
import { email, enqueued, ISO_MILLIS, postEnqueue, waitFor } from '../../support/queue.ts'
import { apiAt, atLaterTime, fromNow, getEmail, moveEmail, statusOf } from '../../support/scheduling.ts'
import { postSend, quotaUsed, type Sender, startSender } from '../../support/sending.ts'

const app = useTestApp()
const DAY = 24 * HOUR
const BUSY = { code: 450, message: '4.2.1 Mailbox busy, try again later' }

let s: Sender
beforeAll(async () => {
  s = await startSender(app, 'scheduled', { plan: 'pro' })
})

/** The API timestamp shape of an ISO date-time, as GET shows `scheduled_at`. */
function apiTime(iso: string): string {
  return new Date(iso).toISOString().slice(0, 19).replace('T', ' ')
}

async function listed(key: string, status: string): Promise<number[]> {
  const reply = await app.request(`/emails?status=${status}&limit=100`, { key })
  return ((await reply.json()) as { emails: { id: number }[] }).emails.map((e) => e.id)
}

describe('scheduled_at on POST /enqueue', () => {
  it('takes a time from now to 30 days ahead, with an offset, and refuses either side of each bound', async () => {
    for (const at of [fromNow(MINUTE), fromNow(30 * DAY - 5 * MINUTE), fromNow(2 * HOUR, '+05:30')]) {
      const reply = await postEnqueue(app, s.key, email({ scheduled_at: at }))
      expect(reply.status, `${at}: ${JSON.stringify(reply.body)}`).toBe(200)
    }
    const refused = [
      [fromNow(-MINUTE), 'too_small'],
      [fromNow(30 * DAY + 5 * MINUTE), 'too_big'],
      [fromNow(HOUR).slice(0, 19), 'invalid_format'],
      ['next monday', 'invalid_format'],
    ] as const
    for (const [at, code] of refused) {
      const reply = await postEnqueue(app, s.key, email({ scheduled_at: at }))
      expect({ status: reply.status, body: reply.body }, at).toEqual({
        status: 400,
        body: validationBody([{ path: ['scheduled_at'], code }]),
      })
    }
  })

  it('is refused by POST /send, which sends now, and nothing is sent', async () => {
    const reply = await postSend(app, s.key, email({ scheduled_at: fromNow(HOUR) }))
    expect({ status: reply.status, body: reply.body }).toEqual({
      status: 400,
      body: validationBody([{ path: ['scheduled_at'], code: 'custom' }]),
    })
    expect(s.sink.messages).toHaveLength(0)
  })

  it('reads scheduled until due, is absent from the server before its time and delivered after', async () => {
    const at = fromNow(10 * MINUTE)
    const reply = await postEnqueue(app, s.key, email({ to: 'later@example.com', scheduled_at: at }))
    expect(reply.status).toBe(200)
    expect(reply.body).toMatchObject({
      queuedAt: expect.stringMatching(ISO_MILLIS),
      scheduledAt: new Date(at).toISOString(),
    })
    const id = reply.body.outboxId as number

    const scheduled = (await getEmail(app, s.key, id)).body.email
    expect(scheduled).toMatchObject({ status: 'scheduled', scheduled_at: apiTime(at), attempts: 0 })
    expect(scheduled.history).toEqual([{ type: 'scheduled', at: expect.stringMatching(TIMESTAMP) }])
    expect(await listed(s.key, 'scheduled')).toContain(id)
    expect(await listed(s.key, 'queued')).not.toContain(id)

    // A worker on the present clock sends what is due and leaves the scheduled email alone.
    await app.worker()
    const now = await enqueued(app, s.key, email({ to: 'now@example.com' }))
    await waitFor('the unscheduled email', async () =>
      (await statusOf(app, s.key, now)) === 'sent' ? true : undefined,
    )
    expect(s.sink.messages.flatMap((m) => m.envelope.to)).not.toContain('later@example.com')
    expect(await statusOf(app, s.key, id)).toBe('scheduled')

    await atLaterTime(app, 11 * MINUTE, { connections: [s.connectionId] }, async (ahead) => {
      const api = apiAt(ahead)
      const sent = await waitFor('the scheduled email', async () => {
        const view = (await getEmail(api, s.key, id)).body.email
        return view.status === 'sent' ? view : undefined
      })
      expect(s.sink.messages.flatMap((m) => m.envelope.to)).toContain('later@example.com')
      expect(sent.history.map((e: { type: string }) => e.type)).toEqual(['scheduled', 'queued', 'sent'])
      expect(sent.scheduled_at).toBe(apiTime(at))
    })
  })
})

describe('a scheduled email and the queue', () => {
  it('takes no quota unit while it waits: the connection’s last unit goes to mail due now', async () => {
    const metered = await startSender(app, 'scheduled-quota', {
      plan: 'pro',
      quota: { quota: 1, per: 'day' },
    })
    const later = await enqueued(
      app,
      metered.key,
      email({ to: 'later@example.com', scheduled_at: fromNow(HOUR) }),
    )
    await app.worker()
    const now = await enqueued(app, metered.key, email({ to: 'now@example.com' }))
    await waitFor('the email due now', async () =>
      (await statusOf(app, metered.key, now)) === 'sent' ? true : undefined,
    )
    expect(await quotaUsed(app, metered.connectionId)).toBe(1)
    expect(await statusOf(app, metered.key, later)).toBe('scheduled')
  })

  it('still waits for its time when a resumed connection lets its waiting mail go', async () => {
    const paused = await startSender(app, 'scheduled-paused', { plan: 'pro' })
    const id = await enqueued(app, paused.key, email({ scheduled_at: fromNow(HOUR) }))
    await pauseConnection(app.services.sql, paused.connectionId)
    await resumeConnection(app.services.sql, paused.connectionId)
    expect((await getEmail(app, paused.key, id)).body.email).toMatchObject({
      status: 'scheduled',
      next_attempt_at: (await getEmail(app, paused.key, id)).body.email.scheduled_at,
    })
  })

  it('counts its time in the queue from when it is due, not from when it was scheduled', async () => {
    // Four days ahead, longer than the queue's 72-hour lifetime: a deferral then is retried.
    const far = await startSender(app, 'scheduled-far', {
      plan: 'pro',
      behaviour: { recipientReplies: { 'far@example.com': BUSY } },
    })
    const id = await enqueued(app, far.key, email({ to: 'far@example.com', scheduled_at: fromNow(4 * DAY) }))
    await atLaterTime(app, 4 * DAY + MINUTE, { connections: [far.connectionId] }, async (ahead) => {
      const api = apiAt(ahead)
      const deferred = await waitFor('the first attempt', async () => {
        const view = (await getEmail(api, far.key, id)).body.email
        return view.attempts >= 1 && view.status !== 'sending' ? view : undefined
      })
      expect(deferred).toMatchObject({ status: 'queued', last_error: expect.stringContaining('450') })
      far.sink.setBehaviour({ recipientReplies: {} })
      await waitFor('the retry', async () =>
        (await statusOf(api, far.key, id)) === 'sent' ? true : undefined,
      )
    })
  })
})

describe('PATCH /emails/{id}', () => {
  it('moves a scheduled email, under the same bounds', async () => {
    const id = await enqueued(app, s.key, email({ scheduled_at: fromNow(HOUR) }))
    const to = fromNow(3 * DAY, '-04:00')
    const moved = await moveEmail(app, s.key, id, { scheduled_at: to })
    expect(moved.status, JSON.stringify(moved.body)).toBe(200)
    expect(moved.body.email).toMatchObject({ id, status: 'scheduled', scheduled_at: apiTime(to) })
    expect((await getEmail(app, s.key, id)).body.email.scheduled_at).toBe(apiTime(to))

    for (const [at, code] of [
      [fromNow(-MINUTE), 'too_small'],
      [fromNow(31 * DAY), 'too_big'],
    ] as const) {
      const reply = await moveEmail(app, s.key, id, { scheduled_at: at })
      expect({ status: reply.status, body: reply.body }).toEqual({
        status: 400,
        body: validationBody([{ path: ['scheduled_at'], code }]),
      })
    }
    const missing = await moveEmail(app, s.key, id, {})
    expect(missing.status).toBe(400)
  })

  it('answers 409 EMAIL_NOT_SCHEDULED with the status of an email that is not scheduled', async () => {
    const queued = await enqueued(app, s.key, email())
    const reply = await moveEmail(app, s.key, queued, { scheduled_at: fromNow(HOUR) })
    expect({ status: reply.status, body: reply.body }).toEqual({
      status: 409,
      body: {
        code: 'EMAIL_NOT_SCHEDULED',
        message: expect.any(String),
        details: { status: expect.stringMatching(/^(queued|sending|sent)$/) },
      },
    })
  })

  it('answers 404 for another account’s email, as GET does', async () => {
    const other = await startSender(app, 'other-owner', { plan: 'pro' })
    const id = await enqueued(app, other.key, email({ scheduled_at: fromNow(HOUR) }))
    const reply = await moveEmail(app, s.key, id, { scheduled_at: fromNow(2 * HOUR) })
    expect(reply.status).toBe(404)
    expect(reply.body.code).toBe('OUTBOX_RECORD_NOT_FOUND')
    expect(await statusOf(app, other.key, id)).toBe('scheduled')
  })
})
