/**
 * What guards the dashboard's sign-in and forms: cross-site requests refused, failed sign-ins
 * throttled per account and per client address, and a Secure cookie behind an https public URL.
 */
import { describe, expect, it } from 'vitest'
import { HASH_SLOTS } from '../../src/accounts/passwords.ts'
import { useTestApp } from '../support/app.ts'
import { later, MINUTE } from '../support/clock.ts'
import {
  accountWithPassword,
  client,
  expectRedirect,
  ORIGIN,
  signedIn,
  textOf,
  uniqueEmail,
} from '../support/dashboard.ts'
import { HASHES_TIMEOUT, PASSWORD, sessionCookieLine, signInThrough } from '../support/sign-in.ts'

const app = useTestApp({ trustProxy: true })
const signIn = signInThrough(app)

describe('cross-site requests', () => {
  it('a form posted from another site is refused (403), even with the right token', async () => {
    const { browser } = await signedIn(app)
    const refused = await browser.post(
      '/dashboard/keys',
      { name: 'planted' },
      { origin: 'https://evil.example' },
    )
    expect(refused.status).toBe(403)
    expect(textOf(refused.html)).toContain('This form was sent from another site')
    const crossSite = await browser.post(
      '/dashboard/keys',
      { name: 'planted' },
      { origin: false, headers: { 'sec-fetch-site': 'cross-site' } },
    )
    expect(crossSite.status).toBe(403)
    expect(textOf((await browser.get('/dashboard/keys')).html)).not.toContain('planted')
  })

  it('a form without the session token, or with another session’s, is refused', async () => {
    const { browser } = await signedIn(app)
    const { browser: other } = await signedIn(app)
    expect((await browser.post('/dashboard/keys', { name: 'planted' }, { token: false })).status).toBe(403)
    expect((await browser.post('/dashboard/keys', { name: 'planted' }, { token: other.token })).status).toBe(
      403,
    )
    expect((await browser.post('/dashboard/logout', {}, { token: 'x' })).status).toBe(403)
    expect((await browser.get('/dashboard')).status).toBe(200)
  })

  it('a sign-in form not from the sign-in page of this browser is refused', async () => {
    const account = await accountWithPassword(app, PASSWORD)
    const forged = client(app)
    const page = await forged.post(
      '/dashboard/login',
      { email: account.email, password: PASSWORD },
      { token: 'x' },
    )
    expect(page.status).toBe(403)
    expect(forged.cookies.has('mailroom_session')).toBe(false)
    const fromElsewhere = client(app)
    await fromElsewhere.get('/dashboard/login')
    const foreign = await fromElsewhere.post(
      '/dashboard/login',
      { email: account.email, password: PASSWORD },
      { origin: 'https://evil.example' },
    )
    expect(foreign.status).toBe(403)
  })

  it('every page forbids framing and loads scripts only from the dashboard', async () => {
    const { browser } = await signedIn(app)
    const page = await browser.get('/dashboard')
    expect(page.headers.get('x-frame-options')).toBe('DENY')
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'")
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
    expect(page.headers.get('cache-control')).toBe('no-store')
  })
})

describe('throttling failed sign-ins', () => {
  const attempts = async (subject: string) => {
    const [row] = await app.services.sql<{ attempts: number }[]>`
      select attempts from sign_in_attempts where subject = ${subject}`
    return row?.attempts ?? 0
  }
  const message = (html: string) => /role="alert"[^>]*>\s*<p>([^<]*)/.exec(html)?.[1]

  it(
    '10 failures for an address in 15 minutes refuse the next attempt, even with the right password',
    async () => {
      const account = await accountWithPassword(app, PASSWORD)
      // As many at once as the line of password checks takes: each is counted before its
      // password is checked.
      const tries = []
      for (let first = 0; first < 10; first += HASH_SLOTS.running + HASH_SLOTS.waiting) {
        const burst = Math.min(10 - first, HASH_SLOTS.running + HASH_SLOTS.waiting)
        tries.push(
          ...(await Promise.all(
            Array.from({ length: burst }, (_, i) =>
              signIn(account.email, 'wrong wrong wrong', { address: `203.0.113.${first + i}` }),
            ),
          )),
        )
      }
      for (const { page } of tries) expect(page.status).toBe(401)
      expect(await attempts(`email:${account.email}`)).toBe(10)
      // From a client address that never failed: the address signed in with is what is held back.
      const right = await signIn(account.email, PASSWORD, { address: '203.0.113.100' })
      expect(right.page.status).toBe(429)
      expect(Number(right.page.headers.get('retry-after'))).toBeGreaterThan(14 * 60)
      expect(Number(right.page.headers.get('retry-after'))).toBeLessThanOrEqual(15 * 60)
      expect(message(right.page.html)).toMatch(/^Too many failed sign-ins\. Try again in 1[45] minutes\.$/)
      expect(right.browser.cookies.has('mailroom_session')).toBe(false)
      // Once the window has passed, the right password works again.
      await app.services.sql`
      update sign_in_attempts set window_start = now() - interval '15 minutes' where subject = ${`email:${account.email}`}`
      expectRedirect((await signIn(account.email, PASSWORD, { address: '203.0.113.101' })).page, '/dashboard')
      expect(await attempts(`email:${account.email}`)).toBe(0)
    },
    HASHES_TIMEOUT,
  )

  it('a window of failures ends when the service’s clock passes its 15 minutes', async () => {
    const account = await accountWithPassword(app, PASSWORD)
    await app.services.sql`
      insert into sign_in_attempts (subject, attempts, window_start)
      values (${`email:${account.email}`}, 10, mailroom_now())`
    expect((await signIn(account.email, PASSWORD, { address: '203.0.113.105' })).page.status).toBe(429)
    const browser = client(await later(app, 15 * MINUTE + 1_000), { 'x-forwarded-for': '203.0.113.106' })
    await browser.get('/dashboard/login')
    const page = await browser.post('/dashboard/login', {
      email: account.email,
      password: PASSWORD,
      next: '',
    })
    expectRedirect(page, '/dashboard')
  })

  it('counts failures for an unknown address the same, and answers them with the same message', async () => {
    const unknown = uniqueEmail('nobody')
    expect((await signIn(unknown, 'wrong wrong wrong', { address: '203.0.113.110' })).page.status).toBe(401)
    expect(await attempts(`email:${unknown}`)).toBe(1)
    const known = await accountWithPassword(app, PASSWORD)
    await app.services.sql`
      update sign_in_attempts set attempts = 10 where subject = ${`email:${unknown}`}`
    await app.services.sql`
      insert into sign_in_attempts (subject, attempts, window_start) values (${`email:${known.email}`}, 10, now())`
    const none = await signIn(unknown, PASSWORD, { address: '203.0.113.111' })
    const right = await signIn(known.email, PASSWORD, { address: '203.0.113.112' })
    expect(none.page.status).toBe(429)
    expect(right.page.status).toBe(429)
    expect(message(none.page.html)).toBe(message(right.page.html))
  })

  it('10 failures from a client address refuse its next attempt at any account; a success takes its attempt back', async () => {
    const account = await accountWithPassword(app, PASSWORD)
    expectRedirect((await signIn(account.email, PASSWORD, { address: '203.0.113.120' })).page, '/dashboard')
    expect(await attempts('client:203.0.113.120')).toBe(0)
    expect(
      (await signIn(uniqueEmail('guess'), 'wrong wrong wrong', { address: '203.0.113.120' })).page.status,
    ).toBe(401)
    expect(await attempts('client:203.0.113.120')).toBe(1)
    await app.services.sql`update sign_in_attempts set attempts = 10 where subject = 'client:203.0.113.120'`
    expect((await signIn(account.email, PASSWORD, { address: '203.0.113.120' })).page.status).toBe(429)
    expectRedirect((await signIn(account.email, PASSWORD, { address: '203.0.113.121' })).page, '/dashboard')
  })
})

describe('MAILROOM_PUBLIC_URL over https', () => {
  const secure = useTestApp({ publicUrl: 'https://mail.example.com' })

  it('makes the session cookie Secure, and accepts forms from that origin', async () => {
    const account = await accountWithPassword(secure, PASSWORD)
    const browser = client(secure)
    await browser.get('/dashboard/login')
    const page = await browser.post(
      '/dashboard/login',
      { email: account.email, password: PASSWORD },
      { origin: 'https://mail.example.com' },
    )
    expectRedirect(page, '/dashboard')
    expect(sessionCookieLine(page.headers)).toMatch(/; Secure/i)
    expect(ORIGIN).toBe('http://localhost')
  })
})
