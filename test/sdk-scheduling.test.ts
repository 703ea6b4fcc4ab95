/**
 * The SDK's emails.update, emails.cancel and batches.cancel, generated from the contract, against
 * the server: typed, answering the email or batch, and raising the 409s as MailroomErrors.
 */
import { createClient, type Email, MailroomError } from '@mailroom/sdk'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { seedAccount, useTestApp } from './support/app.ts'
import { HOUR } from './support/clock.ts'
import { fromNow } from './support/scheduling.ts'

const app = useTestApp({}, { listen: true })

describe('scheduling through the SDK', () => {
  it('enqueues for later, moves, cancels, and cancels a batch', async () => {
    const sink = await app.sink({ port: 465 })
    const owner = await seedAccount(app, {
      plan: 'pro',
      connection: { ...sink.login, from: 'sdk@example.com' },
    })
    const mailroom = createClient({ baseUrl: app.baseUrl, apiKey: owner.key })

    const queued = await mailroom.enqueue({
      to: 'ada@example.com',
      subject: 'Later',
      text_body: 'Hi',
      scheduled_at: fromNow(HOUR),
    })
    expectTypeOf(queued.scheduledAt).toEqualTypeOf<string | undefined>()
    expect(queued.scheduledAt).toEqual(expect.any(String))

    const moved = await mailroom.emails.update(queued.outboxId, { scheduled_at: fromNow(2 * HOUR, '+01:00') })
    expectTypeOf(moved.email).toEqualTypeOf<Email>()
    expect(moved.email.status).toBe('scheduled')

    const canceled = await mailroom.emails.cancel(queued.outboxId)
    expect(canceled.email.status).toBe('canceled')
    const again = await mailroom.emails.cancel(queued.outboxId).catch((error: unknown) => error)
    expect(again).toBeInstanceOf(MailroomError)
    expect(again).toMatchObject({
      status: 409,
      code: 'EMAIL_NOT_CANCELABLE',
      details: { status: 'canceled' },
    })

    const batch = await mailroom.batches.create({
      template: { subject: 'News', text_body: 'Hello' },
      recipients: ['grace@example.com'],
      scheduled_at: fromNow(HOUR),
    })
    const stopped = await mailroom.batches.cancel(batch.batch_id)
    expectTypeOf(stopped.batch.status).toEqualTypeOf<
      'pending' | 'running' | 'completed' | 'failed' | 'canceled'
    >()
    expect(stopped.batch).toMatchObject({ status: 'canceled', progress: 100 })
  })
})
