/**
 * GET /v1/emails/{id}: what became of an email, with every field in the contract's shapes and
 * its history (queued or submitted, each attempt with the server's reply, its failure, a retry
 * by hand), and who may read it.
 */
import { describe, expect, it } from 'vitest'
import { pauseConnection } from '../../../src/connections/connections.ts'
import { seedAccount, useTestApp } from '../../support/app.ts'
import { createdBatch, mailroomJson, waitForBatchEnd } from '../../support/batches.ts'
import { useEmailsApi } from '../../support/emails.ts'
import { humanText, TIMESTAMP } from '../../support/matchers.ts'
import { email, enqueued } from '../../support/queue.ts'
import { postSend, startSender } from '../../support/sending.ts'

const app = useTestApp()
const { get, emailOf, list, waitForEmail, proSender } = useEmailsApi(app)

const BUSY = { code: 450, message: '4.2.1 Mailbox busy, try again later' }
const at = expect.stringMatching(TIMESTAMP)
const NOT_FOUND = { code: 'OUTBOX_RECORD_NOT_FOUND', message: humanText }

describe('GET /emails/{id}', () => {
  it('answers every field of a /send, with its submission and the attempt the server took', async () => {
    const s = await startSender(app, 'every-field')
    const sent = await postSend(app, s.key, {
      to: ['ada@example.com', 'bob@example.com'],
      cc: 'cc@example.com',
      bcc: ['bcc@example.com'],
      subject: 'All the fields',
      text_body: 'Hello',
    })
    expect(sent.status).toBe(200)
    const answer = await emailOf(s.key, sent.body.outboxId as number)
    const accepted = (address: string) => ({ email: address, status: 'accepted', reply: null })
    const everyone = ['ada@example.com', 'bob@example.com', 'cc@example.com', 'bcc@example.com'].map(accepted)
    expect(answer).toEqual({
      status: 200,
      body: {
        success: true,
        email: {
          id: sent.body.outboxId,
          status: 'sent',
          from: s.from,
          to: ['ada@example.com', 'bob@example.com'],
          cc: ['cc@example.com'],
          bcc: ['bcc@example.com'],
          subject: 'All the fields',
          connection_id: s.connectionId,
          batch_id: null,
          source: 'api',
          message_id: sent.body.messageId,
          attempts: 1,
          last_error: null,
          recipients: everyone,
          created_at: at,
          updated_at: at,
          sent_at: at,
          next_attempt_at: null,
          scheduled_at: null,
          tags: [],
          reply_to: [],
          headers: {},
          attachments: [],
          history: [
            { type: 'submitted', at },
            {
              type: 'sent',
              at,
              attempt: 1,
              outcome: 'delivered',
              reply: expect.stringMatching(/^250 /),
              recipients: everyone,
            },
          ],
        },
      },
    })
    const { email: shown } = answer.body
    expect(shown.history[0].at).toBe(shown.created_at)
    expect(shown.history[1].at).toBe(shown.sent_at)
  })

  it('a queued email not tried yet: queued, every recipient pending, its next attempt said', async () => {
    const s = await proSender('held')
    // A paused connection holds queued mail (accepted, waiting).
    await pauseConnection(app.services.sql, s.connectionId)
    const id = await enqueued(app, s.key, email({ to: 'ada@example.com', cc: 'cc@example.com' }))
    const { body } = await emailOf(s.key, id)
    expect(body.email).toMatchObject({
      id,
      status: 'queued',
      attempts: 0,
      last_error: null,
      sent_at: null,
      next_attempt_at: at,
      recipients: [
        { email: 'ada@example.com', status: 'pending', reply: null },
        { email: 'cc@example.com', status: 'pending', reply: null },
      ],
      history: [{ type: 'queued', at: body.email.created_at }],
    })
  })

  it('history of a queued email deferred, then sent: the deferral with its reason, the send with the reply', async () => {
    const s = await proSender('deferred', { recipientReplies: { 'ada@example.com': BUSY } })
    const id = await enqueued(app, s.key, email({ to: 'ada@example.com' }))
    const waiting = await waitForEmail(s.key, id, (e) => e.status === 'queued' && e.attempts >= 1)
    expect(waiting).toMatchObject({
      last_error: expect.stringContaining('450 4.2.1 Mailbox busy'),
      next_attempt_at: at,
      recipients: [
        { email: 'ada@example.com', status: 'deferred', reply: '450 4.2.1 Mailbox busy, try again later' },
      ],
    })

    s.sink.setBehaviour({ recipientReplies: {} })
    const sent = await waitForEmail(s.key, id, (e) => e.status === 'sent')
    expect(sent.last_error).toBeNull()
    expect(sent.next_attempt_at).toBeNull()
    const deferrals = sent.history.filter((e: { type: string }) => e.type === 'deferred')
    expect(deferrals.length).toBeGreaterThanOrEqual(1)
    expect(sent.history).toEqual([
      { type: 'queued', at: sent.created_at },
      ...deferrals.map((_: unknown, i: number) => ({
        type: 'deferred',
        at,
        attempt: i + 1,
        outcome: 'deferred',
        reply: '450 4.2.1 Mailbox busy, try again later',
        recipients: [
          { email: 'ada@example.com', status: 'deferred', reply: '450 4.2.1 Mailbox busy, try again later' },
        ],
      })),
      {
        type: 'sent',
        at: sent.sent_at,
        attempt: deferrals.length + 1,
        outcome: 'delivered',
        reply: expect.stringMatching(/^250 /),
        recipients: [{ email: 'ada@example.com', status: 'accepted', reply: null }],
      },
    ])
    expect(sent.attempts).toBe(deferrals.length + 1)
  })

  it('history of a permanent failure: the refusal with the reply, then failed with the reason', async () => {
    const s = await proSender('refused', { rejectRecipients: ['gone@example.com'] })
    const id = await enqueued(app, s.key, email({ to: 'gone@example.com' }))
    const failed = await waitForEmail(s.key, id, (e) => e.status === 'failed')
    expect(failed.last_error).toMatch(/550 5\.1\.1/)
    expect(failed).toMatchObject({
      attempts: 1,
      sent_at: null,
      next_attempt_at: null,
      recipients: [
        { email: 'gone@example.com', status: 'refused', reply: expect.stringMatching(/^550 5\.1\.1/) },
      ],
    })
    expect(failed.history).toEqual([
      { type: 'queued', at: failed.created_at },
      {
        type: 'refused',
        at,
        attempt: 1,
        outcome: 'refused',
        reply: expect.stringMatching(/^550 5\.1\.1/),
        recipients: failed.recipients,
      },
      { type: 'failed', at: failed.updated_at, reason: failed.last_error },
    ])
  })

  it("history after an operator's retry: the failure it undid, the retry, then the send", {
    timeout: 30_000,
  }, async () => {
    // A policy refusal, which suppresses no one: the retry goes back to the server.
    const policy = { code: 550, message: '5.7.1 Recipient address rejected' }
    const s = await proSender('retried', { recipientReplies: { 'later@example.com': policy } })
    const batchId = await createdBatch(app, s.key, {
      template: { subject: 'News', text_body: 'Hello' },
      recipients: ['now@example.com', 'later@example.com'],
    })
    await waitForBatchEnd(app, s.key, batchId)
    const { body: page } = await list(s.key, `?batch_id=${batchId}&status=failed`)
    expect(page.emails.map((e: { to: string[] }) => e.to)).toEqual([['later@example.com']])
    const [before] = page.emails
    expect(before.batch_id).toBe(batchId)

    s.sink.setBehaviour({ recipientReplies: {} })
    await mailroomJson(app.db.url, ['batch', 'retry', String(batchId)])
    const sent = await waitForEmail(s.key, before.id, (e) => e.status === 'sent')
    expect(sent.history).toEqual([
      { type: 'queued', at: sent.created_at },
      expect.objectContaining({ type: 'refused', attempt: 1, outcome: 'refused' }),
      { type: 'failed', at: before.updated_at, reason: before.last_error },
      { type: 'retried', at, by: 'operator' },
      expect.objectContaining({ type: 'sent', attempt: 2, outcome: 'delivered' }),
    ])
    expect(sent.last_error).toBeNull()
  })

  it("answers 404 for another account's email and for an unknown one; 400 INVALID_ID for a non-number", async () => {
    const s = await startSender(app, 'owner')
    const other = await seedAccount(app)
    const sent = await postSend(app, s.key, email())
    const id = sent.body.outboxId as number
    expect((await emailOf(s.key, id)).status).toBe(200)
    expect(await emailOf(other.key, id)).toEqual({ status: 404, body: NOT_FOUND })
    expect(await emailOf(s.key, 2_147_483_647)).toEqual({ status: 404, body: NOT_FOUND })
    // Digits are a number, however large: one no email has, not a malformed ID.
    for (const unknown of [2_147_483_648, '9007199254740993', '99999999999999999999', '9'.repeat(400)]) {
      expect(await emailOf(s.key, unknown)).toEqual({ status: 404, body: NOT_FOUND })
    }
    for (const bad of ['abc', '-1', '1.5', '1e3', '0x10', ' 1']) {
      expect(await emailOf(s.key, bad)).toEqual({
        status: 400,
        body: { code: 'INVALID_ID', message: humanText },
      })
    }
  })
})

describe('authentication', () => {
  it('answers 401 without a key or with a wrong one, on both operations', async () => {
    for (const path of ['/emails', '/emails/1']) {
      expect(await get(undefined, path)).toEqual({
        status: 401,
        body: { error: 'Missing or invalid Authorization header' },
      })
      expect(await get('mr_wrong', path)).toEqual({
        status: 401,
        body: { error: 'Invalid or expired API token' },
      })
    }
  })
})
