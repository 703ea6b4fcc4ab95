/**
 * /send and /enqueue leave out the recipients the account suppressed for all mail: every one
 * suppressed answers 422 RECIPIENT_SUPPRESSED with nothing recorded or used; some answer 200
 * naming them. An address suppressed after /enqueue accepted its email is skipped when it is sent.
 */
import { describe, expect, it } from 'vitest'
import { createForm } from '../../src/forms/forms.ts'
import { useTestApp } from '../support/app.ts'
import { useEmailsApi } from '../support/emails.ts'
import { humanText } from '../support/matchers.ts'
import { dailyUsed, postSend, quotaUsed, type Reply, type Sender, startSender } from '../support/sending.ts'

const app = useTestApp()
const { waitForEmail } = useEmailsApi(app)

async function suppress(s: Sender, emails: string[], scope: 'all' | 'marketing' = 'all') {
  const added = await app.request('/suppressions', { key: s.key, body: { emails, scope } })
  expect(added.status).toBe(201)
}

async function outboxCount(s: Sender): Promise<number> {
  const [row] = await app.services.sql<{ n: number }[]>`
    select count(*)::int as n from outbox where account_id = ${s.accountId}`
  return row?.n ?? 0
}

const mail = (to: string | string[], extra: Record<string, unknown> = {}) => ({
  to,
  subject: 'Hello',
  text_body: 'Hi',
  ...extra,
})

/** A /send to ada, gone (suppressed for all mail) and bob (Bcc) from a sender of its own. */
async function sendPartlySuppressed(): Promise<{ s: Sender; sent: Reply }> {
  const s = await startSender(app, 'supsend')
  await suppress(s, ['gone@example.com'])
  const sent = await postSend(
    app,
    s.key,
    mail(['ada@example.com', 'gone@example.com'], { bcc: 'bob@example.com' }),
  )
  return { s, sent }
}

describe('POST /send', () => {
  it('every recipient suppressed: 422 RECIPIENT_SUPPRESSED with details.suppressed; nothing sent, recorded or used, the key unused', async () => {
    const s = await startSender(app, 'supsend', { quota: { quota: 100, per: 'day' } })
    await suppress(s, ['gone@example.com', 'left@example.com'])
    const refused = await postSend(app, s.key, mail('GONE@example.com', { cc: 'left@example.com' }), 'key-1')
    expect(refused).toMatchObject({
      status: 422,
      body: {
        code: 'RECIPIENT_SUPPRESSED',
        message: humanText,
        details: {
          suppressed: [
            { email: 'GONE@example.com', reason: 'manual' },
            { email: 'left@example.com', reason: 'manual' },
          ],
        },
      },
    })
    expect(s.sink.messages).toHaveLength(0)
    expect(await outboxCount(s)).toBe(0)
    expect(await dailyUsed(app, s.accountId)).toBe(0)
    expect(await quotaUsed(app, s.connectionId)).toBe(0)
    // The key was never taken: once the address is removed, the same key sends afresh.
    await app.request('/suppressions/gone%40example.com', { key: s.key, method: 'DELETE' })
    const sent = await postSend(app, s.key, mail('gone@example.com'), 'key-1')
    expect(sent.status).toBe(200)
    expect(sent.body.replayed).toBeUndefined()
  })

  it('some suppressed: 200, the others get it, suppressedRecipients and the message name them', async () => {
    const { s, sent } = await sendPartlySuppressed()
    expect(sent).toMatchObject({
      status: 200,
      body: {
        success: true,
        suppressedRecipients: [{ email: 'gone@example.com', reason: 'manual' }],
        message: expect.stringContaining('gone@example.com'),
      },
    })
    expect(s.sink.messages.flatMap((m) => m.envelope.to).sort()).toEqual([
      'ada@example.com',
      'bob@example.com',
    ])
  })

  it('some suppressed: replaying under the Idempotency-Key names the suppressed as the first answer did, even once the entry is removed', async () => {
    const s = await startSender(app, 'supsend')
    await suppress(s, ['gone@example.com'])
    const request = mail(['ada@example.com', 'gone@example.com'])
    const first = await postSend(app, s.key, request, 'replay-key')
    expect(first.body.suppressedRecipients).toEqual([{ email: 'gone@example.com', reason: 'manual' }])
    const removed = await app.request('/suppressions/gone%40example.com', { key: s.key, method: 'DELETE' })
    expect(removed.status).toBe(200)
    const replayed = await postSend(app, s.key, request, 'replay-key')
    expect(replayed).toMatchObject({
      status: 200,
      body: {
        replayed: true,
        outboxId: first.body.outboxId,
        suppressedRecipients: [{ email: 'gone@example.com', reason: 'manual' }],
        message: first.body.message,
      },
    })
    expect(s.sink.messages).toHaveLength(1)
  })

  it('some suppressed: GET /emails/{id} lists every recipient, the suppressed ones with status suppressed and the reason', async () => {
    const { s, sent } = await sendPartlySuppressed()
    expect(sent.status).toBe(200)
    const email = await waitForEmail(s.key, sent.body.outboxId ?? 0, (e) => e.status !== 'queued')
    expect(email.recipients).toEqual([
      { email: 'ada@example.com', status: 'accepted', reply: null },
      { email: 'gone@example.com', status: 'suppressed', reply: 'suppressed (manual)' },
      { email: 'bob@example.com', status: 'accepted', reply: null },
    ])
  })

  it('marketing entries do not apply', async () => {
    const s = await startSender(app, 'supsend')
    await suppress(s, ['news@example.com'], 'marketing')
    const sent = await postSend(app, s.key, mail('news@example.com'))
    expect(sent.status).toBe(200)
    expect(sent.body.suppressedRecipients).toBeUndefined()
  })
})

describe('POST /enqueue', () => {
  it('at acceptance: 422 when every recipient is suppressed, 200 naming the suppressed otherwise', async () => {
    const s = await startSender(app, 'supq', { plan: 'pro' })
    await suppress(s, ['gone@example.com'])
    const all = await app.request('/enqueue', { key: s.key, body: mail('gone@example.com') })
    expect(all.status).toBe(422)
    expect((await all.json()).code).toBe('RECIPIENT_SUPPRESSED')
    expect(await outboxCount(s)).toBe(0)
    const some = await app.request('/enqueue', {
      key: s.key,
      body: mail(['ada@example.com', 'gone@example.com']),
    })
    expect(some.status).toBe(200)
    const body = await some.json()
    expect(body.suppressedRecipients).toEqual([{ email: 'gone@example.com', reason: 'manual' }])
    // Not every recipient got it, so it ends failed, the one left out named in its error.
    const email = await waitForEmail(s.key, body.outboxId, (e) => e.status === 'failed')
    expect(email.to).toEqual(['ada@example.com'])
    expect(email.last_error).toContain('gone@example.com: suppressed (manual)')
  })

  it('some suppressed: GET /emails/{id} lists every recipient, before and after the send, the suppressed ones with status suppressed and the reason', async () => {
    const s = await startSender(app, 'supq', { plan: 'pro' })
    await suppress(s, ['gone@example.com'])
    const queued = await app.request('/enqueue', {
      key: s.key,
      body: mail(['ada@example.com', 'gone@example.com'], {
        cc: 'bob@example.com',
        scheduled_at: new Date(Date.now() + 4_000).toISOString(),
      }),
    })
    expect(queued.status).toBe(200)
    const { outboxId } = await queued.json()
    const suppressed = { email: 'gone@example.com', status: 'suppressed', reply: 'suppressed (manual)' }
    const waiting = await waitForEmail(s.key, outboxId, (e) => e.status === 'scheduled')
    expect(waiting.recipients).toEqual([
      { email: 'ada@example.com', status: 'pending', reply: null },
      { email: 'bob@example.com', status: 'pending', reply: null },
      suppressed,
    ])
    const email = await waitForEmail(s.key, outboxId, (e) => e.status === 'failed' || e.status === 'sent')
    expect(email.recipients).toEqual([
      { email: 'ada@example.com', status: 'accepted', reply: null },
      { email: 'bob@example.com', status: 'accepted', reply: null },
      suppressed,
    ])
    expect(s.sink.messages.flatMap((m) => m.envelope.to).sort()).toEqual([
      'ada@example.com',
      'bob@example.com',
    ])
  })

  it('an address suppressed after acceptance is skipped when the email is sent', async () => {
    const s = await startSender(app, 'supq', { plan: 'pro' })
    const queued = await app.request('/enqueue', {
      key: s.key,
      body: mail(['ada@example.com', 'late@example.com'], {
        scheduled_at: new Date(Date.now() + 3_000).toISOString(),
      }),
    })
    expect(queued.status).toBe(200)
    const { outboxId } = await queued.json()
    await suppress(s, ['late@example.com'])
    const email = await waitForEmail(s.key, outboxId, (e) => e.status === 'failed' || e.status === 'sent')
    expect(email.recipients).toEqual([
      { email: 'ada@example.com', status: 'accepted', reply: null },
      { email: 'late@example.com', status: 'suppressed', reply: 'suppressed (manual)' },
    ])
    expect(s.sink.messages.flatMap((m) => m.envelope.to)).toEqual(['ada@example.com'])
  })
})

describe('form notifications', () => {
  it('reach the owner even when the owner’s own address is suppressed', async () => {
    const s = await startSender(app, 'supform')
    await suppress(s, [s.from])
    const form = await createForm(
      app.services.sql,
      s.accountId,
      { name: 'Contact' },
      app.services.config.publicUrl,
    )
    const submitted = await app.requestRoot(`/forms/${form.public_id}`, {
      method: 'POST',
      body: new URLSearchParams({ message: 'Hello' }),
    })
    expect(submitted.status).toBeLessThan(400)
    const [record] = await app.services.sql<{ id: number }[]>`
      select id from outbox where account_id = ${s.accountId}`
    const email = await waitForEmail(
      s.key,
      record?.id ?? 0,
      (e) => e.status === 'sent' || e.status === 'failed',
    )
    expect(email.status).toBe('sent')
    expect(s.sink.messages.flatMap((m) => m.envelope.to)).toEqual([s.from])
  })
})
