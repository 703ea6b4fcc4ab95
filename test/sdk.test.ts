import {
  createClient,
  type Email,
  type EmailEvent,
  isMailroomError,
  type MailroomClient,
  MailroomError,
} from '@mailroom/sdk'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { type SeededAccount, seedAccount, useTestApp } from './support/app.ts'
import { humanText, TIMESTAMP } from './support/matchers.ts'

// The SDK talks HTTP: a listening server.
const app = useTestApp({}, { listen: true })

function clientFor(owner: SeededAccount | string): MailroomClient {
  return createClient({ baseUrl: app.baseUrl, apiKey: typeof owner === 'string' ? owner : owner.key })
}

/** Runs `call`, which must reject with a MailroomError, and returns that error. */
async function failure(call: () => Promise<unknown>): Promise<MailroomError> {
  let caught: unknown
  try {
    await call()
  } catch (error) {
    caught = error
  }
  expect(caught).toBeInstanceOf(MailroomError)
  expect(isMailroomError(caught)).toBe(true)
  return caught as MailroomError
}

const content = { name: 'Renewal reminder', subject: 'Your plan renews soon', text_body: 'Hi {{first_name}}' }

describe('templates through the SDK', () => {
  it('create, list, get, update and delete round-trip against the server', async () => {
    const owner = await seedAccount(app)
    const mailroom = clientFor(owner)

    const created = await mailroom.templates.create(content)
    expect(created).toEqual({
      success: true,
      template: {
        id: expect.any(Number),
        user_id: owner.account.id,
        ...content,
        html_body: null,
        created_at: expect.stringMatching(TIMESTAMP),
        updated_at: expect.stringMatching(TIMESTAMP),
      },
    })
    const { template } = created

    expect(await mailroom.templates.list()).toEqual({ success: true, templates: [template] })
    expect(await mailroom.templates.get(template.id)).toEqual({ success: true, template })

    const updated = await mailroom.templates.update(template.id, { html_body: '<p>Hi</p>' })
    expect(updated).toEqual({
      success: true,
      template: { ...template, html_body: '<p>Hi</p>', updated_at: expect.stringMatching(TIMESTAMP) },
    })
    expect(await mailroom.templates.get(template.id)).toEqual(updated)

    expect(await mailroom.templates.delete(template.id)).toEqual({ success: true, message: humanText })
    expect(await mailroom.templates.list()).toEqual({ success: true, templates: [] })
  })
})

describe('errors surface as MailroomError with status and code', () => {
  it('401: an unknown key gives INVALID_API_KEY', async () => {
    const error = await failure(() => clientFor(`mr_${'x'.repeat(43)}`).templates.list())
    expect(error.status).toBe(401)
    expect(error.code).toBe('INVALID_API_KEY')
    expect(error.body).toEqual({ error: 'Invalid or expired API token' })
  })

  it('403: another account’s template gives ACCESS_DENIED', async () => {
    const owner = await seedAccount(app)
    const intruder = await seedAccount(app)
    const { template } = await clientFor(owner).templates.create(content)
    for (const call of [
      () => clientFor(intruder).templates.get(template.id),
      () => clientFor(intruder).templates.update(template.id, { name: 'Hijacked' }),
      () => clientFor(intruder).templates.delete(template.id),
    ]) {
      const error = await failure(call)
      expect(error.status).toBe(403)
      expect(error.code).toBe('ACCESS_DENIED')
      expect(error.body).toEqual({ error: 'Access denied' })
    }
    expect(await clientFor(owner).templates.get(template.id)).toEqual({ success: true, template })
  })

  it('403: the Free plan’s 4th template gives TEMPLATE_LIMIT_REACHED with limit details', async () => {
    const owner = await seedAccount(app, { plan: 'free' })
    const mailroom = clientFor(owner)
    for (let i = 1; i <= 3; i++) await mailroom.templates.create({ ...content, name: `Template ${i}` })
    const error = await failure(() => mailroom.templates.create({ ...content, name: 'Template 4' }))
    expect(error.status).toBe(403)
    expect(error.code).toBe('TEMPLATE_LIMIT_REACHED')
    expect(error.details).toEqual({ limit: 3, used: 3, upgradeRequired: true })
    expect(error.message).toMatch(/\S/)
    expect(error.body).toEqual({
      error: 'Template limit reached',
      limit: 3,
      used: 3,
      upgradeRequired: true,
      message: humanText,
    })
  })

  it('404: an unknown template gives TEMPLATE_NOT_FOUND', async () => {
    const owner = await seedAccount(app)
    const mailroom = clientFor(owner)
    const { template } = await mailroom.templates.create(content)
    await mailroom.templates.delete(template.id)
    for (const call of [
      () => mailroom.templates.get(template.id),
      () => mailroom.templates.update(template.id, { name: 'Gone' }),
      () => mailroom.templates.delete(template.id),
    ]) {
      const error = await failure(call)
      expect(error.status).toBe(404)
      expect(error.code).toBe('TEMPLATE_NOT_FOUND')
      expect(error.body).toEqual({ error: 'Template not found' })
    }
  })

  it('400: a body failing validation gives VALIDATION_ERROR with its issues', async () => {
    const owner = await seedAccount(app)
    const error = await failure(() => clientFor(owner).templates.create({ ...content, name: '' }))
    expect(error.status).toBe(400)
    expect(error.code).toBe('VALIDATION_ERROR')
    expect(error.issues).toEqual([{ path: ['name'], message: humanText, code: 'too_small' }])
  })

  it('400: a subject over 998 characters on update gives VALIDATION_ERROR with its issues', async () => {
    const owner = await seedAccount(app)
    const mailroom = clientFor(owner)
    const { template } = await mailroom.templates.create(content)
    const error = await failure(() => mailroom.templates.update(template.id, { subject: 's'.repeat(999) }))
    expect(error.status).toBe(400)
    expect(error.code).toBe('VALIDATION_ERROR')
    expect(error.issues).toEqual([{ path: ['subject'], message: humanText, code: 'too_big' }])
  })

  it('audience checks give the catalog codes of their fixed texts', async () => {
    const sink = await app.sink({ port: 465 })
    const owner = await seedAccount(app, { plan: 'pro', connection: { ...sink.login } })
    const mailroom = clientFor(owner)
    const intruder = clientFor(await seedAccount(app, { plan: 'pro' }))
    const { audience } = await mailroom.audiences.create({ name: 'Empty for now' })
    const checks: [() => Promise<unknown>, number, string, string][] = [
      [() => mailroom.audiences.get(999_999), 404, 'AUDIENCE_NOT_FOUND', 'Audience not found'],
      [
        () => mailroom.audiences.members.delete(audience.id, 999_999),
        404,
        'MEMBER_NOT_FOUND',
        'Member not found',
      ],
      [
        () =>
          mailroom.batches.create({
            template: { subject: 'Hi', text_body: 'Hello' },
            audience_id: 999_999,
          }),
        400,
        'INVALID_AUDIENCE',
        'Invalid audience',
      ],
      [
        () =>
          mailroom.batches.create({
            template: { subject: 'Hi', text_body: 'Hello' },
            audience_id: audience.id,
          }),
        400,
        'AUDIENCE_HAS_NO_MEMBERS',
        'Audience has no members',
      ],
      [() => intruder.audiences.get(audience.id), 403, 'ACCESS_DENIED', 'Access denied'],
    ]
    for (const [call, status, code, text] of checks) {
      const error = await failure(call)
      expect([error.status, error.code, error.body]).toEqual([status, code, { error: text }])
    }
  })

  it('404: a batch the account does not have gives BATCH_NOT_FOUND', async () => {
    const owner = await seedAccount(app, { plan: 'pro' })
    const error = await failure(() => clientFor(owner).batches.get(999_999))
    expect(error.status).toBe(404)
    expect(error.code).toBe('BATCH_NOT_FOUND')
    expect(error.message).toMatch(/\S/)
    expect(error.body).toEqual({ code: 'BATCH_NOT_FOUND', message: humanText })
  })
})

describe('sending through the SDK', () => {
  it('sends, replays under the same idempotency key, and surfaces limits as typed errors', async () => {
    const sink = await app.sink({ port: 465 })
    const owner = await seedAccount(app, {
      plan: 'free',
      connection: { ...sink.login, from: 'sdk@example.com', quota: { quota: 1, per: 'hour' } },
    })
    const mailroom = clientFor(owner)
    const body = { to: 'ada@example.com', subject: 'Through the SDK', text_body: 'Hello' }

    const sent = await mailroom.send(body, { idempotencyKey: 'sdk-1' })
    expect(sent).toEqual({
      success: true,
      messageId: expect.any(String),
      outboxId: expect.any(Number),
      from: 'sdk@example.com',
      message: humanText,
    })
    expect(await mailroom.send(body, { idempotencyKey: 'sdk-1' })).toEqual({ ...sent, replayed: true })
    expect(sink.messages).toHaveLength(1)

    const limited = await failure(() => mailroom.send(body, { idempotencyKey: 'sdk-2' }))
    expect(limited.status).toBe(429)
    expect(limited.code).toBe('QUOTA_EXCEEDED')
    expect(limited.details).toEqual({ limit: 1, used: 1, resetsAt: expect.any(String) })
    expect(limited.retryAfter).toBeGreaterThanOrEqual(1)

    const invalid = await failure(() => mailroom.send({ ...body, to: 'not an address' }))
    expect(invalid.code).toBe('VALIDATION_ERROR')
    expect(invalid.issues).toEqual([{ path: ['to'], message: humanText, code: 'invalid_format' }])
  })
})

describe('queued mail, audiences and batches through the SDK', () => {
  it('enqueues, imports an audience, creates and reads a batch, and types the Pro refusal', async () => {
    const sink = await app.sink({ port: 465 })
    const owner = await seedAccount(app, {
      plan: 'pro',
      connection: { ...sink.login, from: 'sdk-pro@example.com' },
    })
    const mailroom = clientFor(owner)
    const queued = await mailroom.enqueue({ to: 'ada@example.com', subject: 'Later', text_body: 'Hi' })
    expect(queued).toEqual({
      success: true,
      message: humanText,
      outboxId: expect.any(Number),
      from: 'sdk-pro@example.com',
      queuedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    })

    const { audience } = await mailroom.audiences.create({ name: 'SDK readers' })
    const added = await mailroom.audiences.members.add(audience.id, {
      members: [{ email: 'ada@example.com', payload: { first_name: 'Ada' } }, { email: 'ADA@example.com' }],
    })
    expect(added).toEqual({ success: true, inserted: 1, duplicates: 1, message: humanText })

    const created = await mailroom.batches.create({
      template: { subject: 'Hi {{first_name}}', text_body: 'Hello' },
      audience_id: audience.id,
    })
    expect(created).toEqual({
      success: true,
      batch_id: expect.any(Number),
      total_count: 1,
      message: humanText,
      status_url: `/v1/batches/${created.batch_id}`,
    })
    const { batch } = await mailroom.batches.get(created.batch_id)
    expect(batch).toMatchObject({ id: created.batch_id, status: 'pending', total_count: 1, progress: 0 })
    const running = await failure(() => mailroom.batches.delete(created.batch_id))
    expect(running.code).toBe('INVALID_STATUS')

    const free = clientFor(await seedAccount(app))
    const refused = await failure(() => free.batches.create({ emails: [] }))
    expect(refused.status).toBe(403)
    expect(refused.code).toBe('FEATURE_NOT_AVAILABLE')
    expect(refused.details).toEqual({ feature: 'batch_sending', upgradeRequired: true })
  })
})

describe('emails through the SDK', () => {
  it('emails.get and emails.list are typed and answer what became of a send; another account gets OUTBOX_RECORD_NOT_FOUND', async () => {
    const sink = await app.sink({ port: 465 })
    const owner = await seedAccount(app, { connection: { ...sink.login, from: 'follow@example.com' } })
    const mailroom = clientFor(owner)
    const sent = await mailroom.send({ to: 'ada@example.com', subject: 'Follow me', text_body: 'Hello' })

    const { email } = await mailroom.emails.get(sent.outboxId)
    expectTypeOf(email).toEqualTypeOf<Email>()
    expectTypeOf(email.status).toEqualTypeOf<
      'scheduled' | 'queued' | 'sending' | 'sent' | 'failed' | 'canceled'
    >()
    expectTypeOf(email.history).toEqualTypeOf<EmailEvent[] | undefined>()
    expect(email).toMatchObject({
      id: sent.outboxId,
      status: 'sent',
      from: 'follow@example.com',
      to: ['ada@example.com'],
      subject: 'Follow me',
      message_id: sent.messageId,
      created_at: expect.stringMatching(TIMESTAMP),
    })
    expect(email.history?.map((e) => e.type)).toEqual(['submitted', 'sent'])

    const page = await mailroom.emails.list({ status: 'sent', limit: 1 })
    expect(page.emails.map((e) => e.id)).toEqual([sent.outboxId])
    expect(page.pagination).toEqual({ limit: 1, hasMore: false, nextCursor: null })
    expect(page.emails[0]).not.toHaveProperty('history')

    const intruder = clientFor(await seedAccount(app))
    const error = await failure(() => intruder.emails.get(sent.outboxId))
    expect([error.status, error.code, error.body]).toEqual([
      404,
      'OUTBOX_RECORD_NOT_FOUND',
      { code: 'OUTBOX_RECORD_NOT_FOUND', message: humanText },
    ])
    expect((await intruder.emails.list()).emails).toEqual([])

    const refused = await failure(() => mailroom.emails.list({ limit: 101 }))
    expect([refused.status, refused.code, refused.issues?.map((i) => i.path)]).toEqual([
      400,
      'VALIDATION_ERROR',
      [['limit']],
    ])
  })
})
