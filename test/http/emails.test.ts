/**
 * GET /v1/emails/{id} and GET /v1/emails: what became of an email, with
 * every field in the contract's shapes, its history (queued or submitted, each attempt with the
 * server's reply, its failure, a retry by hand), and the list's filters, paging and refusals.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { pauseConnection } from '../../src/connections/connections.ts'
import { retryPolicy } from '../../src/queue/retry-policy.ts'
import { type SeededAccount, seedAccount, useTestApp } from '../support/app.ts'
import { addresses, createdBatch, mailroomJson, waitForBatchEnd } from '../support/batches.ts'
import { humanText, TIMESTAMP, validationBody } from '../support/matchers.ts'
import { email, enqueued, waitFor } from '../support/queue.ts'
import { postSend, type Sender, startSender } from '../support/sending.ts'

const app = useTestApp()

beforeAll(async () => {
  // Deferred mail is tried again 200 ms later; three transient failures end it.
  await app.worker({ retry: retryPolicy(200, 3, 100) })
})

const BUSY = { code: 450, message: '4.2.1 Mailbox busy, try again later' }
const at = expect.stringMatching(TIMESTAMP)
const NOT_FOUND = { code: 'OUTBOX_RECORD_NOT_FOUND', message: humanText }

interface Answer {
  status: number
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are checked field by field
  body: any
}

async function get(key: string | undefined, path: string): Promise<Answer> {
  const res = await app.request(path, key === undefined ? {} : { key })
  return { status: res.status, body: await res.json() }
}

function emailOf(key: string, id: number | string): Promise<Answer> {
  return get(key, `/emails/${id}`)
}

function list(key: string, query = ''): Promise<Answer> {
  return get(key, `/emails${query}`)
}

/** The email once `done` says so, as GET /emails/{id} shows it. */
function waitForEmail(key: string, id: number, done: (email: Answer['body']['email']) => boolean) {
  return waitFor(
    async () => `email ${id}: ${JSON.stringify((await emailOf(key, id)).body)}`,
    async () => {
      const { body } = await emailOf(key, id)
      return done(body.email) ? body.email : undefined
    },
    15_000,
  )
}

function proSender(label: string, behaviour = {}): Promise<Sender> {
  return startSender(app, label, { plan: 'pro', behaviour })
}

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
          message_id: sent.body.messageId,
          attempts: 1,
          last_error: null,
          recipients: everyone,
          created_at: at,
          updated_at: at,
          sent_at: at,
          next_attempt_at: null,
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
    const s = await proSender('retried', { rejectRecipients: ['later@example.com'] })
    const batchId = await createdBatch(app, s.key, {
      template: { subject: 'News', text_body: 'Hello' },
      recipients: ['now@example.com', 'later@example.com'],
    })
    await waitForBatchEnd(app, s.key, batchId)
    const { body: page } = await list(s.key, `?batch_id=${batchId}&status=failed`)
    expect(page.emails.map((e: { to: string[] }) => e.to)).toEqual([['later@example.com']])
    const [before] = page.emails
    expect(before.batch_id).toBe(batchId)

    s.sink.setBehaviour({ rejectRecipients: [] })
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

describe('GET /emails', () => {
  /** An account with `count` sent emails, oldest first. */
  async function withSent(count: number): Promise<{ s: Sender; ids: number[] }> {
    const s = await startSender(app, 'lister')
    const ids: number[] = []
    for (let i = 0; i < count; i++) {
      const sent = await postSend(app, s.key, email({ subject: `Number ${i}` }))
      ids.push(sent.body.outboxId as number)
    }
    return { s, ids }
  }

  const ids = (page: Answer) => page.body.emails.map((e: { id: number }) => e.id)

  it('lists newest first, each email as GET /emails/{id} gives it without its history; Free plan included', async () => {
    const { s, ids: sent } = await withSent(3)
    const page = await list(s.key)
    expect(page.status).toBe(200)
    expect(page.body).toEqual({
      success: true,
      emails: expect.any(Array),
      pagination: { limit: 50, hasMore: false, nextCursor: null },
    })
    expect(ids(page)).toEqual([...sent].reverse())
    const { history: _, ...one } = (await emailOf(s.key, sent[0] as number)).body.email
    expect(page.body.emails[2]).toEqual(one)
  })

  it("never lists another account's emails", async () => {
    const { s } = await withSent(1)
    const other = await seedAccount(app)
    expect((await list(other.key)).body.emails).toEqual([])
    expect(ids(await list(s.key))).toHaveLength(1)
  })

  it('pages with the cursor it gives until hasMore is false; limit 1 and 100 are taken', async () => {
    const { s, ids: sent } = await withSent(5)
    const seen: number[] = []
    let query = '?limit=2'
    const sizes: number[] = []
    for (;;) {
      const page = await list(s.key, query)
      expect(page.status).toBe(200)
      expect(page.body.pagination.limit).toBe(2)
      sizes.push(page.body.emails.length)
      seen.push(...ids(page))
      if (!page.body.pagination.hasMore) {
        expect(page.body.pagination.nextCursor).toBeNull()
        break
      }
      expect(page.body.pagination.nextCursor).toEqual(expect.any(String))
      query = `?limit=2&cursor=${encodeURIComponent(page.body.pagination.nextCursor)}`
    }
    expect(sizes).toEqual([2, 2, 1])
    expect(seen).toEqual([...sent].reverse())

    const one = await list(s.key, '?limit=1')
    expect(ids(one)).toEqual([sent[4]])
    expect(one.body.pagination).toEqual({ limit: 1, hasMore: true, nextCursor: expect.any(String) })
    const hundred = await list(s.key, '?limit=100')
    expect(hundred.body.pagination).toEqual({ limit: 100, hasMore: false, nextCursor: null })
    expect(ids(hundred)).toHaveLength(5)
  })

  it('a page of exactly the rest says there is no more', async () => {
    const { s } = await withSent(2)
    expect((await list(s.key, '?limit=2')).body.pagination).toEqual({
      limit: 2,
      hasMore: false,
      nextCursor: null,
    })
  })

  it('filters by status and by batch', async () => {
    const s = await proSender('filters', { rejectRecipients: ['gone@example.com'] })
    const sent = await postSend(app, s.key, email({ to: 'ok@example.com' }))
    const failed = await postSend(app, s.key, email({ to: 'gone@example.com' }))
    expect(failed.status).toBe(500)
    const batchId = await createdBatch(app, s.key, {
      template: { subject: 'B', text_body: 'b' },
      recipients: addresses('member', 2),
    })
    await waitForBatchEnd(app, s.key, batchId)

    const sentOnes = await list(s.key, '?status=sent')
    expect(sentOnes.body.emails.every((e: { status: string }) => e.status === 'sent')).toBe(true)
    expect(sentOnes.body.emails.map((e: { to: string[] }) => e.to[0]).sort()).toEqual([
      ...addresses('member', 2),
      'ok@example.com',
    ])
    expect(ids(sentOnes)).toContain(sent.body.outboxId)
    const failedOnes = await list(s.key, '?status=failed')
    expect(failedOnes.body.emails).toEqual([
      expect.objectContaining({ status: 'failed', to: ['gone@example.com'] }),
    ])
    expect(ids(await list(s.key, '?status=queued'))).toEqual([])

    const ofBatch = await list(s.key, `?batch_id=${batchId}`)
    expect(ofBatch.body.emails.map((e: { to: string[] }) => e.to[0]).sort()).toEqual(addresses('member', 2))
    expect(ofBatch.body.emails.every((e: { batch_id: number }) => e.batch_id === batchId)).toBe(true)
    // Another account's batch has no emails here.
    const other = await seedAccount(app)
    expect((await list(other.key, `?batch_id=${batchId}`)).body.emails).toEqual([])
    expect(ids(await list(s.key, `?batch_id=${batchId}&status=failed`))).toEqual([])
  })

  it('filters by a range of UTC days on creation, both ends included', async () => {
    const { s, ids: sent } = await withSent(3)
    const [early, late, today] = sent as [number, number, number]
    // Creation instants on both sides of a day's boundary.
    await app.services.sql`update outbox set created_at = '2025-01-10 23:59:59.999+00' where id = ${early}`
    await app.services.sql`update outbox set created_at = '2025-01-11 00:00:00+00' where id = ${late}`
    expect(ids(await list(s.key, '?date_from=2025-01-10&date_to=2025-01-10'))).toEqual([early])
    expect(ids(await list(s.key, '?date_from=2025-01-11&date_to=2025-01-11'))).toEqual([late])
    expect(ids(await list(s.key, '?date_from=2025-01-10&date_to=2025-01-11'))).toEqual([late, early])
    expect(ids(await list(s.key, '?date_to=2025-01-10'))).toEqual([early])
    expect(ids(await list(s.key, '?date_from=2025-01-12'))).toEqual([today])
    expect(ids(await list(s.key, '?date_to=2025-01-09'))).toEqual([])
  })

  describe('refuses what it cannot take with the validation body', () => {
    const cases: [string, string][] = [
      ['?limit=0', 'limit'],
      ['?limit=101', 'limit'],
      ['?limit=-1', 'limit'],
      ['?limit=ten', 'limit'],
      ['?status=delivered', 'status'],
      ['?status=', 'status'],
      ['?batch_id=0', 'batch_id'],
      ['?batch_id=abc', 'batch_id'],
      ['?batch_id=2147483648', 'batch_id'],
      ['?date_from=2025-1-1', 'date_from'],
      ['?date_from=2025-02-30', 'date_from'],
      ['?date_to=2025-13-01', 'date_to'],
      ['?date_to=0000-01-01', 'date_to'],
      ['?date_from=2025-01-02&date_to=2025-01-01', 'date_from'],
      ['?cursor=', 'cursor'],
      ['?cursor=not-a-cursor', 'cursor'],
      // "012" and "0": not how a cursor is written.
      [`?cursor=${Buffer.from('012').toString('base64url')}`, 'cursor'],
      [`?cursor=${Buffer.from('0').toString('base64url')}`, 'cursor'],
      [`?cursor=${Buffer.from('99999999999').toString('base64url')}`, 'cursor'],
      [`?cursor=${'A'.repeat(65)}`, 'cursor'],
    ]
    let owner: SeededAccount
    beforeAll(async () => {
      owner = await seedAccount(app)
    })
    for (const [query, path] of cases) {
      it(`${query} -> 400 at ${path}`, async () => {
        const answer = await list(owner.key, query)
        expect(answer.status).toBe(400)
        expect(answer.body).toEqual(validationBody(answer.body.error.issues))
        expect(answer.body.error.issues.map((i: { path: string[] }) => i.path)).toContainEqual([path])
      })
    }

    it('takes the edges: limit 1 and 100, batch_id 1 and 2147483647, February 29th of a leap year', async () => {
      for (const query of [
        '?limit=1',
        '?limit=100',
        '?batch_id=1',
        '?batch_id=2147483647',
        '?date_from=2024-02-29&date_to=2024-02-29',
      ]) {
        expect((await list(owner.key, query)).status, query).toBe(200)
      }
    })
  })
})
