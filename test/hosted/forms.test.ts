/**
 * Hosted forms (docs/hosted-pages.md): unguessable public IDs; urlencoded, multipart
 * (files refused) and JSON submissions; the email from the connection to itself, fields
 * escaped, Reply-To from a valid `email`; through the queue (Free daily limit included) and in
 * the outbox; redirect only to the configured URL; allowed origins; size and field limits;
 * honeypot; per-address limits; CR/LF unable to add a header.
 */
import { describe, expect, it } from 'vitest'
import { disableConnection } from '../../src/connections/connections.ts'
import { createForm, deleteForm, getForm, listForms, updateForm } from '../../src/forms/forms.ts'
import { HONEYPOT_FIELD, MAX_FIELDS } from '../../src/forms/submission.ts'
import { HOSTED_BODY_LIMIT_BYTES } from '../../src/hosted/app.ts'
import { FORM_SUBMISSIONS_PER_HOUR } from '../../src/signups/submission-limit.ts'
import { useTestApp } from '../support/app.ts'
import { textOf } from '../support/dashboard.ts'
import { holdsUntil, waitForOutboxStatus } from '../support/queue.ts'
import { type Sender, setDailyUsed, startSender } from '../support/sending.ts'

const app = useTestApp({ trustProxy: true, publicUrl: 'https://mail.example.test' })
let client = 0
const PUBLIC = 'https://mail.example.test'

function submit(
  publicId: string,
  body: BodyInit | Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<Response> {
  return app.requestRoot(`/forms/${publicId}`, {
    method: 'POST',
    body,
    headers: { 'x-forwarded-for': `192.0.2.${++client % 250}`, ...headers },
  })
}

async function formOf(s: Sender, settings: { redirectUrl?: string; allowedOrigins?: string[] } = {}) {
  return createForm(app.services.sql, s.accountId, { name: 'Contact us', ...settings }, PUBLIC)
}

async function outboxOf(accountId: number) {
  return app.services.sql<
    { id: number; subject: string; to_addresses: string[]; reply_to: string | null; status: string }[]
  >`
    select id, subject, to_addresses, reply_to, status from outbox where account_id = ${accountId} order by id`
}

describe('setting up forms', () => {
  it('gives each form an unguessable public ID and URL, and checks its settings', async () => {
    const s = await startSender(app, 'setup')
    const a = await formOf(s, {
      redirectUrl: 'https://example.com/thanks',
      allowedOrigins: ['https://example.com'],
    })
    const b = await formOf(s)
    expect(a.public_id).toMatch(/^[A-Za-z0-9_-]{22}$/)
    expect(a.public_id).not.toBe(b.public_id)
    expect(a.url).toBe(`${PUBLIC}/forms/${a.public_id}`)
    expect(a).toMatchObject({
      redirect_url: 'https://example.com/thanks',
      allowed_origins: ['https://example.com'],
    })
    const set = (settings: Record<string, unknown>) =>
      createForm(app.services.sql, s.accountId, { name: 'x', ...settings }, PUBLIC)
    await expect(set({ name: ' ' })).rejects.toMatchObject({ code: 'INVALID_NAME' })
    await expect(set({ redirectUrl: 'javascript:alert(1)' })).rejects.toMatchObject({
      code: 'INVALID_FORM_SETTING',
    })
    await expect(set({ allowedOrigins: ['https://example.com/path'] })).rejects.toMatchObject({
      code: 'INVALID_FORM_SETTING',
    })
    await expect(set({ connectionId: 999_999 })).rejects.toMatchObject({ code: 'UNKNOWN_CONNECTION' })
    const changed = await updateForm(app.services.sql, s.accountId, b.id, { name: 'Renamed' }, PUBLIC)
    expect(changed.name).toBe('Renamed')
    expect((await listForms(app.services.sql, s.accountId, PUBLIC)).map((f) => f.id)).toEqual([a.id, b.id])
    const other = await startSender(app, 'other')
    await expect(getForm(app.services.sql, other.accountId, a.id, PUBLIC)).rejects.toMatchObject({
      code: 'FORM_NOT_FOUND',
    })
    await deleteForm(app.services.sql, s.accountId, b.id)
    expect((await app.requestRoot(`/forms/${b.public_id}`)).status).toBe(404)
  })
})

describe('submitting', () => {
  it('shows a hosted page with the form, and answers 404 for an unknown ID or a database ID', async () => {
    const s = await startSender(app, 'page')
    const form = await formOf(s)
    const page = await app.requestRoot(`/forms/${form.public_id}`)
    expect(page.status).toBe(200)
    const html = await page.text()
    expect(html).toContain('name="email"')
    expect(html).not.toContain('<script')
    expect((await app.requestRoot(`/forms/${form.id}`)).status).toBe(404)
    expect((await submit('A'.repeat(22), new URLSearchParams({ a: 'b' }))).status).toBe(404)
  })

  it('emails each submission from the connection to itself, fields escaped, Reply-To from `email`, through the queue', async () => {
    const s = await startSender(app, 'mail')
    const form = await formOf(s)
    const res = await submit(
      form.public_id,
      new URLSearchParams({
        name: '<b>Ann</b>',
        email: 'ann@example.com',
        message: 'Hi\r\nBcc: victim@example.com',
        to: 'victim@example.com',
      }),
    )
    expect(res.status).toBe(200)
    expect(textOf(await res.text())).toContain('Thank you')
    const [record] = await outboxOf(s.accountId)
    expect(record).toMatchObject({
      subject: 'New submission: Contact us',
      to_addresses: [s.from],
      reply_to: 'ann@example.com',
      status: 'queued',
    })
    await app.worker()
    const [mail] = await s.sink.waitForMessages(1, 15_000)
    expect(mail?.envelope).toEqual({ from: s.from, to: [s.from] })
    expect(mail?.headers.get('reply-to')).toBe('ann@example.com')
    expect(mail?.headers.get('subject')).toBe('New submission: Contact us')
    expect(mail?.headers.has('bcc')).toBe(false)
    const raw = (mail?.raw ?? '').replace(/=\r?\n/g, '')
    expect(raw).toContain('&lt;b&gt;Ann&lt;/b&gt;')
    expect(raw).not.toContain('<b>Ann</b></td>')
    await waitForOutboxStatus(app, s.accountId, record?.id as number, 'sent')
    expect((await getForm(app.services.sql, s.accountId, form.id, PUBLIC)).submissions).toBe(1)
  })

  it('takes multipart fields and JSON, refuses files and nested values, and sets no Reply-To from an invalid email', async () => {
    const s = await startSender(app, 'kinds')
    const form = await formOf(s)
    const multipart = new FormData()
    multipart.set('email', 'not an address\r\nX-Evil: 1')
    multipart.set('topic', 'multipart')
    expect((await submit(form.public_id, multipart)).status).toBe(200)
    const json = await submit(
      form.public_id,
      { email: 'json@example.com', n: 3, ok: true },
      { accept: 'application/json' },
    )
    expect(json.status).toBe(200)
    expect(await json.json()).toEqual({ success: true, message: expect.any(String) })
    const withFile = new FormData()
    withFile.set('cv', new Blob(['file content']), 'cv.pdf')
    const file = await submit(form.public_id, withFile, { accept: 'application/json' })
    expect(file.status).toBe(400)
    expect(await file.json()).toMatchObject({
      code: 'INVALID_SUBMISSION',
      message: expect.stringContaining('Files'),
    })
    const nested = await submit(form.public_id, { a: { b: 1 } }, { accept: 'application/json' })
    expect(nested.status).toBe(400)
    const notJson = await submit(form.public_id, '{"a":', { 'content-type': 'application/json' })
    expect(notJson.status).toBe(400)
    const records = await outboxOf(s.accountId)
    expect(records.map((r) => r.reply_to)).toEqual([null, 'json@example.com'])
  })

  it(`takes at most ${MAX_FIELDS} fields and ${HOSTED_BODY_LIMIT_BYTES / 1024} KiB`, async () => {
    const s = await startSender(app, 'limits')
    const form = await formOf(s)
    const fields = (n: number) => new URLSearchParams(Array.from({ length: n }, (_, i) => [`f${i}`, 'v']))
    expect((await submit(form.public_id, fields(MAX_FIELDS))).status).toBe(200)
    expect((await submit(form.public_id, fields(MAX_FIELDS + 1))).status).toBe(400)
    const big = (size: number) => new URLSearchParams({ m: 'x'.repeat(size - 2) }).toString()
    const headers = { 'content-type': 'application/x-www-form-urlencoded' }
    expect((await submit(form.public_id, big(HOSTED_BODY_LIMIT_BYTES), headers)).status).toBe(200)
    const tooBig = await submit(form.public_id, big(HOSTED_BODY_LIMIT_BYTES + 1), {
      ...headers,
      accept: 'application/json',
    })
    expect(tooBig.status).toBe(413)
    expect(await tooBig.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' })
    expect(await outboxOf(s.accountId)).toHaveLength(2)
  })

  it('redirects only to the configured URL (303), whatever the request names', async () => {
    const s = await startSender(app, 'redirect')
    const form = await formOf(s, { redirectUrl: 'https://example.com/thanks' })
    const res = await submit(
      form.public_id,
      new URLSearchParams({ m: 'x', redirect: 'https://evil.test', _next: 'https://evil.test' }),
    )
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('https://example.com/thanks')
    const plain = await formOf(s)
    const thanks = await submit(plain.public_id, new URLSearchParams({ redirect: 'https://evil.test' }))
    expect(thanks.status).toBe(200)
    expect(thanks.headers.get('location')).toBeNull()
  })

  it('refuses a redirect URL with a line break or another control character where it is set', async () => {
    const s = await startSender(app, 'redirectcontrol')
    const set = (redirectUrl: string) =>
      createForm(app.services.sql, s.accountId, { name: 'x', redirectUrl }, PUBLIC)
    for (const bad of [
      'https://example.com/thanks\r\nSet-Cookie: a=b',
      'https://example.com/\nthanks',
      'https://example.com/\tthanks',
      'https://example.com/thanks\u0001',
      'https://example.com/thanks\u007f',
      'https://example.com/thanks\u0085',
    ]) {
      await expect(set(bad)).rejects.toMatchObject({
        code: 'INVALID_FORM_SETTING',
        message: 'The redirect URL cannot contain line breaks, tabs or other control characters',
      })
    }
    expect((await set('https://example.com/thanks?a=b c#é')).redirect_url).toBe(
      'https://example.com/thanks?a=b c#é',
    )
  })

  it('answers a submission with the thank-you page when the stored redirect URL could not be sent, the email queued once', async () => {
    const s = await startSender(app, 'redirectstored')
    const form = await formOf(s, { redirectUrl: 'https://example.com/thanks' })
    // As stored before such URLs were refused where they are set.
    await app.services.sql`
      update forms set redirect_url = ${'https://example.com/thanks\r\nSet-Cookie: a=b'} where id = ${form.id}`
    const res = await submit(form.public_id, new URLSearchParams({ m: 'x' }))
    expect(res.status).toBe(200)
    expect(res.headers.get('location')).toBeNull()
    expect(textOf(await res.text())).toContain('Thank you')
    expect(await outboxOf(s.accountId)).toHaveLength(1)
  })

  it('refuses origins outside the allowed list with 403, and lets the allowed ones read the answer', async () => {
    const s = await startSender(app, 'origins')
    const form = await formOf(s, { allowedOrigins: ['https://good.example'] })
    const bad = await submit(
      form.public_id,
      { m: 'x' },
      { origin: 'https://evil.example', accept: 'application/json' },
    )
    expect(bad.status).toBe(403)
    expect(await bad.json()).toMatchObject({ code: 'ORIGIN_NOT_ALLOWED' })
    expect(bad.headers.get('access-control-allow-origin')).toBeNull()
    const good = await submit(form.public_id, { m: 'x' }, { origin: 'https://good.example' })
    expect(good.status).toBe(200)
    expect(good.headers.get('access-control-allow-origin')).toBe('https://good.example')
    const own = await submit(form.public_id, new URLSearchParams({ m: 'x' }), { origin: PUBLIC })
    expect(own.status).toBe(200)
    const preflight = await app.requestRoot(`/forms/${form.public_id}`, {
      method: 'OPTIONS',
      headers: { origin: 'https://good.example', 'access-control-request-method': 'POST' },
    })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://good.example')
    expect(await outboxOf(s.accountId)).toHaveLength(2)
  })

  it("tells a visitor a form cannot take submissions when its connection is off, never the owner's address", async () => {
    const s = await startSender(app, 'offline')
    const form = await formOf(s)
    await disableConnection(app.services.sql, s.connectionId, true)
    for (const accept of ['application/json', 'text/html']) {
      const res = await submit(form.public_id, new URLSearchParams({ m: 'hello' }), { accept })
      expect(res.status).toBe(403)
      const text = await res.text()
      expect(text).toContain('This page cannot take submissions at the moment')
      expect(text).not.toContain(s.from)
    }
    expect(await outboxOf(s.accountId)).toHaveLength(0)
  })

  it('takes a filled honeypot for a bot: the same success, nothing stored or sent', async () => {
    const s = await startSender(app, 'honeypot')
    const form = await formOf(s, { redirectUrl: 'https://example.com/thanks' })
    const res = await submit(form.public_id, new URLSearchParams({ m: 'spam', [HONEYPOT_FIELD]: 'x' }))
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('https://example.com/thanks')
    expect(await outboxOf(s.accountId)).toHaveLength(0)
    expect((await getForm(app.services.sql, s.accountId, form.id, PUBLIC)).submissions).toBe(0)
  })

  it(`takes ${FORM_SUBMISSIONS_PER_HOUR} submissions per client address and form an hour`, async () => {
    const s = await startSender(app, 'rate')
    const form = await formOf(s)
    const from = { 'x-forwarded-for': '203.0.113.77' }
    for (let i = 0; i < FORM_SUBMISSIONS_PER_HOUR; i++) {
      expect((await submit(form.public_id, { i }, from)).status).toBe(200)
    }
    const refused = await submit(form.public_id, { i: 'late' }, { ...from, accept: 'application/json' })
    expect(refused.status).toBe(429)
    expect(await refused.json()).toMatchObject({ code: 'TOO_MANY_SUBMISSIONS' })
    expect((await submit(form.public_id, { i: 'other' }, { 'x-forwarded-for': '203.0.113.78' })).status).toBe(
      200,
    )
    expect(await outboxOf(s.accountId)).toHaveLength(FORM_SUBMISSIONS_PER_HOUR + 1)
  })

  it('counts toward the Free daily limit: past it, the submission is accepted and waits in the queue', async () => {
    const s = await startSender(app, 'daily')
    const form = await formOf(s)
    await setDailyUsed(app, s.accountId, 100)
    expect((await submit(form.public_id, { m: 'x' })).status).toBe(200)
    await app.worker()
    // Nothing goes out while the day's limit is used; the record stays queued, checked again and
    // again while the worker runs.
    const checks = await holdsUntil(
      Date.now() + 1_500,
      async () => ({
        arrived: s.sink.messages.length,
        statuses: (await outboxOf(s.accountId)).map((r) => r.status),
      }),
      ({ arrived, statuses }) => {
        expect(arrived).toBe(0)
        expect(statuses).toEqual(['queued'])
      },
    )
    expect(checks).toBeGreaterThan(2)
  })
})
