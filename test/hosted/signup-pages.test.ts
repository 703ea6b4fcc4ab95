/**
 * Hosted sign-up pages (docs/hosted-pages.md): slug rules, the page and its
 * submission as a form and as JSON, the same answer for new and existing addresses, double
 * opt-in through the page's connection, the honeypot, per-address limits, 404 when disabled or
 * no longer Pro.
 */
import { describe, expect, it } from 'vitest'
import { setPlan } from '../../src/accounts/accounts.ts'
import { addMembers, createAudience, listMembers } from '../../src/audiences/audiences.ts'
import { HONEYPOT_FIELD } from '../../src/forms/submission.ts'
import { enableSignupPage, getSignupPage, setSignupPage } from '../../src/signups/signup-pages.ts'
import { SIGNUPS_PER_HOUR } from '../../src/signups/submission-limit.ts'
import { useTestApp } from '../support/app.ts'
import { textOf } from '../support/dashboard.ts'
import { type Sender, startSender } from '../support/sending.ts'

const app = useTestApp({ trustProxy: true, publicUrl: 'https://mail.example.test' })
let client = 0

/** A request to a hosted page from its own client address (X-Forwarded-For: trusted here). */
function post(path: string, body: Record<string, string>, options: { json?: boolean; from?: string } = {}) {
  const headers: Record<string, string> = {
    'x-forwarded-for': options.from ?? `198.51.100.${++client % 250}`,
  }
  if (options.json) headers.accept = 'application/json'
  return app.requestRoot(path, {
    method: 'POST',
    body: options.json ? body : new URLSearchParams(body),
    headers,
  })
}

async function pageFor(sender: Sender, slug: string, settings: { doubleOptIn?: boolean } = {}) {
  const audience = await createAudience(app.services.sql, sender.accountId, { name: `List ${slug}` })
  await setSignupPage(
    app.services.sql,
    sender.accountId,
    audience.id,
    { slug, ...settings },
    app.services.config.publicUrl,
  )
  return audience.id
}

async function members(accountId: number, audienceId: number) {
  return (await listMembers(app.services.sql, accountId, audienceId, { limit: 1000, offset: 0 })).members
}

describe('setting up a page', () => {
  it('takes slugs of 3 to 64 of a-z, 0-9 and -, unique across the service', async () => {
    const s = await startSender(app, 'slugs', { plan: 'pro' })
    const audience = await createAudience(app.services.sql, s.accountId, { name: 'Slugs' })
    const other = await createAudience(app.services.sql, s.accountId, { name: 'Other' })
    const set = (id: number, slug: string) =>
      setSignupPage(app.services.sql, s.accountId, id, { slug }, app.services.config.publicUrl)
    for (const bad of ['ab', 'a'.repeat(65), 'Abc', 'a_b', 'a b', 'ab/c', '']) {
      await expect(set(audience.id, bad)).rejects.toMatchObject({ code: 'INVALID_SLUG' })
    }
    expect((await set(audience.id, 'a-1')).slug).toBe('a-1')
    const long = await set(audience.id, 'b'.repeat(64))
    expect(long).toMatchObject({
      url: `https://mail.example.test/signup/${'b'.repeat(64)}`,
      title: 'Slugs',
      double_opt_in: false,
      enabled: true,
      connection_id: null,
    })
    await expect(set(other.id, 'b'.repeat(64))).rejects.toMatchObject({ code: 'SLUG_TAKEN' })
  })

  it('is a Pro feature, and only for the account’s own audiences', async () => {
    const free = await startSender(app, 'freepage')
    const pro = await startSender(app, 'propage', { plan: 'pro' })
    const audience = await createAudience(app.services.sql, pro.accountId, { name: 'Mine' })
    await setPlan(app.services.sql, pro.accountId, 'free')
    await expect(
      setSignupPage(app.services.sql, pro.accountId, audience.id, { slug: 'free-page' }, ''),
    ).rejects.toMatchObject({ code: 'FEATURE_NOT_AVAILABLE' })
    await setPlan(app.services.sql, pro.accountId, 'pro')
    await expect(
      setSignupPage(app.services.sql, free.accountId, audience.id, { slug: 'not-mine' }, ''),
    ).rejects.toMatchObject({ code: 'AUDIENCE_NOT_FOUND' })
    await expect(
      setSignupPage(
        app.services.sql,
        pro.accountId,
        audience.id,
        { slug: 'x-conn', connectionId: free.connectionId },
        '',
      ),
    ).rejects.toMatchObject({ code: 'UNKNOWN_CONNECTION' })
  })
})

describe('subscribing', () => {
  it('shows a page with an email field and a hidden honeypot, and no script', async () => {
    const s = await startSender(app, 'show', { plan: 'pro' })
    await pageFor(s, 'show-page')
    const res = await app.requestRoot('/signup/show-page')
    expect(res.status).toBe(200)
    const html = await res.text()
    expect(html).toContain('name="email"')
    expect(html).toContain(`name="${HONEYPOT_FIELD}"`)
    expect(html).not.toContain('<script')
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'")
  })

  it('adds a new member with the page’s payload, from a browser form and from JSON, and counts them', async () => {
    const s = await startSender(app, 'sub', { plan: 'pro' })
    const audienceId = await pageFor(s, 'sub-page')
    const form = await post('/signup/sub-page', { email: 'ann@example.com' })
    expect(form.status).toBe(200)
    expect(textOf(await form.text())).toContain('Thank you')
    const json = await post('/signup/sub-page', { email: 'bob@example.com' }, { json: true })
    expect(json.status).toBe(200)
    expect(await json.json()).toEqual({ success: true, message: expect.any(String) })
    const list = await members(s.accountId, audienceId)
    expect(list.map((m) => [m.email, m.payload])).toEqual([
      ['ann@example.com', { source: 'public_signup_page', slug: 'sub-page' }],
      ['bob@example.com', { source: 'public_signup_page', slug: 'sub-page' }],
    ])
    expect((await getSignupPage(app.services.sql, s.accountId, audienceId, ''))?.signups).toBe(2)
  })

  it('answers an address already in the audience exactly as a new one', async () => {
    const s = await startSender(app, 'same', { plan: 'pro' })
    const audienceId = await pageFor(s, 'same-page')
    await addMembers(app.services.sql, s.accountId, audienceId, [
      { email: 'old@example.com', payload: { name: 'Old' } },
    ])
    const existing = await post('/signup/same-page', { email: 'OLD@example.com' }, { json: true })
    const added = await post('/signup/same-page', { email: 'new@example.com' }, { json: true })
    expect(existing.status).toBe(added.status)
    expect(await existing.json()).toEqual(await added.json())
    const list = await members(s.accountId, audienceId)
    expect(list.find((m) => m.email === 'old@example.com')?.payload).toEqual({ name: 'Old' })
    expect(list).toHaveLength(2)
  })

  it('takes every address the API takes: a 64-character local part, `=` and `/`', async () => {
    const s = await startSender(app, 'atext', { plan: 'pro' })
    const audienceId = await pageFor(s, 'atext-page')
    const addresses = [`${'a'.repeat(64)}@example.com`, 'a=b/c@example.com']
    for (const email of addresses) {
      expect((await post('/signup/atext-page', { email }, { json: true })).status).toBe(200)
    }
    expect((await members(s.accountId, audienceId)).map((m) => m.email)).toEqual(addresses)
  })

  it('refuses an invalid address with a clear 400, as a page and as JSON', async () => {
    const s = await startSender(app, 'bad', { plan: 'pro' })
    const audienceId = await pageFor(s, 'bad-page')
    for (const email of [
      '',
      'not-an-address',
      `${'a'.repeat(65)}@example.com`,
      'a@example.com\r\nBcc: x@example.com',
      'a..b@example.com',
    ]) {
      const json = await post('/signup/bad-page', { email }, { json: true })
      expect(json.status).toBe(400)
      expect(await json.json()).toMatchObject({ success: false, code: 'VALIDATION_ERROR' })
    }
    const page = await post('/signup/bad-page', { email: 'nope' })
    expect(page.status).toBe(400)
    expect(textOf(await page.text())).toContain('valid email address')
    const odd = await app.requestRoot('/signup/bad-page', {
      method: 'POST',
      body: '{"email":',
      headers: { 'content-type': 'application/json' },
    })
    expect(odd.status).toBe(400)
    const text = await app.requestRoot('/signup/bad-page', {
      method: 'POST',
      body: 'x',
      headers: { 'content-type': 'text/plain' },
    })
    expect(text.status).toBe(400)
    expect(await members(s.accountId, audienceId)).toHaveLength(0)
  })

  it('shows a browser the form again on a bad address: the problem beside the field, the address kept', async () => {
    const s = await startSender(app, 'again', { plan: 'pro' })
    await pageFor(s, 'again-page')
    const typed = 'ann@@example.com <b>'
    const res = await post('/signup/again-page', { email: typed })
    expect(res.status).toBe(400)
    const html = await res.text()
    expect(html).toMatch(
      /<input type="email" name="email"[^>]* value="ann@@example.com &lt;b&gt;" aria-invalid="true" aria-describedby="email-problem"\/>/,
    )
    expect(html).toContain('<small id="email-problem">Enter a valid email address</small>')
    expect(html).toContain('<button type="submit">Subscribe</button>')
    expect(html).toContain('<h1>List again-page</h1>')
  })

  it('says what happens next: subscribed at once, or once the emailed link is followed', async () => {
    const s = await startSender(app, 'words', { plan: 'pro' })
    await pageFor(s, 'words-now')
    await pageFor(s, 'words-later', { doubleOptIn: true })
    const now = textOf(await (await post('/signup/words-now', { email: 'a@example.com' })).text())
    expect(now).toContain('Thank you: you are subscribed.')
    expect(now).not.toContain('inbox')
    for (const honeypot of ['', 'http://spam']) {
      const later = await post('/signup/words-later', { email: 'b@example.com', [HONEYPOT_FIELD]: honeypot })
      expect(textOf(await later.text())).toContain(
        'Check your inbox: you are subscribed once you follow the link in the email we sent.',
      )
    }
  })

  it('takes a filled honeypot for a bot: the same success, nothing stored', async () => {
    const s = await startSender(app, 'honey', { plan: 'pro' })
    const audienceId = await pageFor(s, 'honey-page')
    const res = await post(
      '/signup/honey-page',
      { email: 'bot@example.com', [HONEYPOT_FIELD]: 'http://spam' },
      { json: true },
    )
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ success: true, message: expect.any(String) })
    expect(await members(s.accountId, audienceId)).toHaveLength(0)
  })

  it(`takes ${SIGNUPS_PER_HOUR} sign-ups per client address and page an hour, the address from X-Forwarded-For when trusted`, async () => {
    const s = await startSender(app, 'limit', { plan: 'pro' })
    const audienceId = await pageFor(s, 'limit-page')
    await pageFor(s, 'limit-other')
    const from = '10.0.0.1, 203.0.113.9'
    for (let i = 0; i < SIGNUPS_PER_HOUR; i++) {
      expect(
        (await post('/signup/limit-page', { email: `p${i}@example.com` }, { from, json: true })).status,
      ).toBe(200)
    }
    const refused = await post('/signup/limit-page', { email: 'late@example.com' }, { from, json: true })
    expect(refused.status).toBe(429)
    expect(await refused.json()).toMatchObject({ success: false, code: 'TOO_MANY_SUBMISSIONS' })
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    // The proxy's own view is the last address: another client behind it is counted apart.
    expect(
      (
        await post(
          '/signup/limit-page',
          { email: 'late@example.com' },
          { from: '10.0.0.1, 203.0.113.10', json: true },
        )
      ).status,
    ).toBe(200)
    expect(
      (await post('/signup/limit-other', { email: 'late@example.com' }, { from, json: true })).status,
    ).toBe(200)
    expect(await members(s.accountId, audienceId)).toHaveLength(SIGNUPS_PER_HOUR + 1)
  })

  it('answers 404 to both methods for a disabled page, an unknown one, and a page of an account no longer Pro', async () => {
    const s = await startSender(app, 'gone', { plan: 'pro' })
    const audienceId = await pageFor(s, 'gone-page')
    const both = async (slug: string) => [
      (await app.requestRoot(`/signup/${slug}`)).status,
      (await post(`/signup/${slug}`, { email: 'x@example.com' })).status,
    ]
    await enableSignupPage(app.services.sql, s.accountId, audienceId, false, '')
    expect(await both('gone-page')).toEqual([404, 404])
    expect(await both('no-such-page')).toEqual([404, 404])
    expect(await both('..%2f..%2fv1')).toEqual([404, 404])
    await enableSignupPage(app.services.sql, s.accountId, audienceId, true, '')
    expect(await both('gone-page')).toEqual([200, 200])
    await setPlan(app.services.sql, s.accountId, 'free')
    expect(await both('gone-page')).toEqual([404, 404])
    expect(await members(s.accountId, audienceId)).toHaveLength(1)
  })
})

describe('double opt-in', () => {
  it('sends a confirmation through the page’s connection; a POST on its link subscribes, once, for 7 days', async () => {
    const s = await startSender(app, 'optin', { plan: 'pro' })
    const audienceId = await pageFor(s, 'optin-page', { doubleOptIn: true })
    await app.worker()
    expect((await post('/signup/optin-page', { email: 'carol@example.com' })).status).toBe(200)
    expect(await members(s.accountId, audienceId)).toHaveLength(0)
    const [mail] = await s.sink.waitForMessages(1, 15_000)
    expect(mail?.envelope.to).toEqual(['carol@example.com'])
    expect(mail?.envelope.from).toBe(s.from)
    const link = /https:\/\/mail\.example\.test(\/signup\/confirm\/[A-Za-z0-9_-]{43})/.exec(
      mail?.raw.replace(/=\r?\n/g, '') ?? '',
    )
    expect(link).not.toBeNull()
    const path = link?.[1] as string
    // Fetching the link (as a mail scanner does) confirms nothing.
    const shown = await app.requestRoot(path)
    expect(shown.status).toBe(200)
    expect(await shown.text()).toContain('<form method="post">')
    expect(await members(s.accountId, audienceId)).toHaveLength(0)
    expect((await app.requestRoot(path, { method: 'POST' })).status).toBe(200)
    expect((await app.requestRoot(path, { method: 'POST' })).status).toBe(200)
    const list = await members(s.accountId, audienceId)
    expect(list.map((m) => [m.email, m.payload])).toEqual([
      ['carol@example.com', { source: 'public_signup_page', slug: 'optin-page' }],
    ])
    expect((await getSignupPage(app.services.sql, s.accountId, audienceId, ''))?.signups).toBe(1)
    expect((await app.requestRoot(`/signup/confirm/${'x'.repeat(43)}`, { method: 'POST' })).status).toBe(404)
  })

  it('expires links after 7 days', async () => {
    const s = await startSender(app, 'expiry', { plan: 'pro' })
    const audienceId = await pageFor(s, 'expiry-page', { doubleOptIn: true })
    await app.worker()
    await post('/signup/expiry-page', { email: 'late@example.com' })
    const [mail] = await s.sink.waitForMessages(1, 15_000)
    const path = /(\/signup\/confirm\/[A-Za-z0-9_-]{43})/.exec(
      mail?.raw.replace(/=\r?\n/g, '') ?? '',
    )?.[1] as string
    const [row] = await app.services.sql<{ days: number }[]>`
      select round(extract(epoch from expires_at - created_at) / 86400)::int as days from signup_confirmations
      where audience_id = ${audienceId}`
    expect(row?.days).toBe(7)
    await app.services
      .sql`update signup_confirmations set expires_at = now() - interval '1 second' where audience_id = ${audienceId}`
    expect((await app.requestRoot(path)).status).toBe(404)
    expect((await app.requestRoot(path, { method: 'POST' })).status).toBe(404)
    expect(await members(s.accountId, audienceId)).toHaveLength(0)
  })
})
