import { createHash } from 'node:crypto'
import { beforeAll, describe, expect, it } from 'vitest'
import type { Account } from '../../src/accounts/accounts.ts'
import { HASH_SLOTS, setPassword } from '../../src/accounts/passwords.ts'
import { safeNext } from '../../src/dashboard/session.ts'
import { useTestApp } from '../support/app.ts'
import { DAY, later, MINUTE } from '../support/clock.ts'
import {
  accountWithPassword,
  client,
  expectRedirect,
  ORIGIN,
  signedIn,
  textOf,
  uniqueEmail,
} from '../support/dashboard.ts'

const app = useTestApp({ trustProxy: true })
const PASSWORD = 'a long enough password'
/** Ten password hashes, one at a time, on a loaded two-core machine. */
const HASHES_TIMEOUT = 120_000
let ACCOUNT: Account

beforeAll(async () => {
  ACCOUNT = await accountWithPassword(app, PASSWORD)
})

/** A client whose requests come from `address` (the app trusts X-Forwarded-For here). */
function from(address: string) {
  return client(app, { 'x-forwarded-for': `198.51.100.250, ${address}` })
}

async function signIn(email: string, password: string, options: { next?: string; address?: string } = {}) {
  const browser = from(options.address ?? '192.0.2.1')
  await browser.get(`/dashboard/login${options.next ? `?next=${encodeURIComponent(options.next)}` : ''}`)
  const page = await browser.post('/dashboard/login', { email, password, next: options.next ?? '' })
  return { browser, page }
}

function sessionCookieLine(headers: Headers): string {
  const line = headers.getSetCookie().find((l) => l.startsWith('mailroom_session='))
  if (!line) throw new Error('no session cookie was set')
  return line
}

describe('a new install', () => {
  const fresh = useTestApp()

  it('says on the sign-in page how the operator makes the first account, until one can sign in', async () => {
    const before = await client(fresh).get('/dashboard/login')
    expect(before.status).toBe(200)
    expect(textOf(before.html)).toContain('No account yet')
    expect(textOf(before.html)).toContain(
      'mailroom account create --email you@example.com --plan pro --password-stdin',
    )
    await accountWithPassword(fresh, PASSWORD)
    const after = await client(fresh).get('/dashboard/login')
    expect(textOf(after.html)).not.toContain('No account yet')
  })
})

describe('pages without a session', () => {
  it.each([
    ['/dashboard', '/dashboard/login'],
    ['/dashboard/', '/dashboard/login?next=%2Fdashboard%2F'],
    [
      '/dashboard/outbox?status=sent&q=a%20b',
      '/dashboard/login?next=%2Fdashboard%2Foutbox%3Fstatus%3Dsent%26q%3Da%2520b',
    ],
    ['/dashboard/batches/5', '/dashboard/login?next=%2Fdashboard%2Fbatches%2F5'],
    ['/dashboard/no-such-page', '/dashboard/login?next=%2Fdashboard%2Fno-such-page'],
  ])('GET %s redirects (303) to %s', async (path, location) => {
    expectRedirect(await client(app).get(path), location)
  })

  it('a post without a session goes to the sign-in page, changing nothing', async () => {
    expectRedirect(
      await client(app).post('/dashboard/keys', { name: 'x' }, { token: 'x' }),
      '/dashboard/login',
    )
  })

  it('the API keeps its own answers beside the dashboard', async () => {
    const unknown = await app.requestRoot('/v1/nothing-here')
    expect(unknown.status).toBe(401)
    const notDashboard = await app.requestRoot('/dashboardx')
    expect(notDashboard.status).toBe(404)
    expect(await notDashboard.json()).toMatchObject({ code: 'NOT_FOUND' })
  })
})

describe('signing in', () => {
  it('starts a session in an HttpOnly, SameSite=Lax cookie (not Secure over http) whose token is stored only as its SHA-256', async () => {
    const account = await accountWithPassword(app, PASSWORD)
    const { browser, page } = await signIn(account.email.toUpperCase(), PASSWORD)
    expectRedirect(page, '/dashboard')
    const line = sessionCookieLine(page.headers)
    expect(line).toMatch(/HttpOnly/i)
    expect(line).toMatch(/SameSite=Lax/i)
    expect(line).toMatch(/Path=\/dashboard/i)
    expect(line).not.toMatch(/Secure/i)
    const token = browser.cookies.get('mailroom_session') as string
    expect(Buffer.from(token, 'base64url').length).toBeGreaterThanOrEqual(16)
    const rows = await app.services.sql<{ token_sha256: Buffer }[]>`
      select token_sha256 from sessions where account_id = ${account.id}`
    expect(rows.map((r) => r.token_sha256.toString('hex'))).toEqual([
      createHash('sha256').update(token).digest('hex'),
    ])
    const home = await browser.get('/dashboard')
    expect(home.status).toBe(200)
    expect(textOf(home.html)).toContain(account.email)
  })

  it.each([
    ['/dashboard/outbox?status=failed', '/dashboard/outbox?status=failed'],
    ['https://evil.example/dashboard', '/dashboard'],
  ])('goes back to next=%j only under /dashboard: %s', async (next, location) => {
    const { page } = await signIn(ACCOUNT.email, PASSWORD, { next })
    expectRedirect(page, location)
  })

  it.each([
    [undefined, '/dashboard'],
    ['/dashboard', '/dashboard'],
    ['/dashboard/batches/7', '/dashboard/batches/7'],
    ['/dashboard/outbox?status=failed&q=a%20b', '/dashboard/outbox?status=failed&q=a%20b'],
    ['https://evil.example/dashboard', '/dashboard'],
    ['//evil.example/dashboard', '/dashboard'],
    ['/\\evil.example', '/dashboard'],
    ['/\t/evil.example', '/dashboard'],
    ['/v1/send', '/dashboard'],
    ['/dashboardx', '/dashboard'],
    ['/dashboard/../v1/send', '/dashboard'],
    ['/dashboard/%2e%2e/v1/send', '/dashboard'],
    ['/dashboard/logout', '/dashboard'],
    ['/dashboard/login?next=https://evil.example', '/dashboard'],
    ['javascript:alert(1)', '/dashboard'],
    ['dashboard/keys', '/dashboard'],
  ])('next=%j leads to %s (only paths under /dashboard: no open redirect)', (next, location) => {
    expect(safeNext(next)).toBe(location)
  })

  it('answers a wrong password and an unknown account with the same page', async () => {
    const account = await accountWithPassword(app, PASSWORD)
    const wrong = await signIn(account.email, 'not the password at all')
    const unknown = await signIn(uniqueEmail('nobody'), 'not the password at all')
    expect(wrong.page.status).toBe(401)
    expect(unknown.page.status).toBe(401)
    expect(textOf(wrong.page.html)).toContain('Wrong email or password.')
    const strip = (html: string) => textOf(html).replace(/value="[^"]*"/g, '')
    expect(strip(wrong.page.html).replace(account.email, 'EMAIL')).toBe(
      strip(unknown.page.html).replace(/nobody\d+-\d+@example\.com/, 'EMAIL'),
    )
    expect(wrong.browser.cookies.has('mailroom_session')).toBe(false)
  })

  it('is refused for an account without a password', async () => {
    const { account } = await signedIn(app)
    const { page } = await signIn(account.email, PASSWORD)
    expect(page.status).toBe(401)
  })
})

describe('sessions end', () => {
  it('on signing out: the cookie is cleared and the token no longer works', async () => {
    const { browser } = await signedIn(app)
    const token = browser.cookies.get('mailroom_session') as string
    expectRedirect(await browser.post('/dashboard/logout'), '/dashboard/login')
    expect(browser.cookies.has('mailroom_session')).toBe(false)
    const again = client(app)
    again.cookies.set('mailroom_session', token)
    expectRedirect(await again.get('/dashboard'), '/dashboard/login')
  })

  it('after 24 hours without use, and after 30 days whatever the use', async () => {
    const idle = await signedIn(app)
    const old = await signedIn(app)
    await app.services.sql`
      update sessions set last_used_at = now() - interval '24 hours 1 minute' where account_id = ${idle.account.id}`
    await app.services.sql`
      update sessions set created_at = now() - interval '30 days 1 minute' where account_id = ${old.account.id}`
    expectRedirect(await idle.browser.get('/dashboard/keys'), '/dashboard/login?next=%2Fdashboard%2Fkeys')
    expectRedirect(await old.browser.get('/dashboard/keys'), '/dashboard/login?next=%2Fdashboard%2Fkeys')
    // Just inside both limits, a session lives on and its use counts.
    const recent = await signedIn(app)
    await app.services.sql`
      update sessions set last_used_at = now() - interval '23 hours 59 minutes',
        created_at = now() - interval '29 days 23 hours' where account_id = ${recent.account.id}`
    expect((await recent.browser.get('/dashboard/keys')).status).toBe(200)
    const [row] = await app.services.sql<{ fresh: boolean }[]>`
      select last_used_at > now() - interval '1 minute' as fresh from sessions where account_id = ${recent.account.id}`
    expect(row?.fresh).toBe(true)
  })

  it('on the service’s clock: 24 hours without use end one, a use within them starts them again', async () => {
    const unused = await signedIn(app)
    const used = await signedIn(app)
    const at = async (session: typeof used, aheadMs: number) => {
      const browser = client(await later(app, aheadMs))
      browser.cookies.set('mailroom_session', session.browser.cookies.get('mailroom_session') as string)
      return browser.get('/dashboard/keys')
    }
    expect((await at(used, DAY - MINUTE)).status).toBe(200)
    expectRedirect(await at(unused, DAY + MINUTE), '/dashboard/login?next=%2Fdashboard%2Fkeys')
    expect((await at(used, 2 * DAY - 2 * MINUTE)).status).toBe(200)
  })

  it('when the operator sets a password (set-password), for every browser of the account', async () => {
    const { browser, account } = await signedIn(app)
    const other = await signedIn(app, { account })
    await setPassword(app.services.sql, account.id, 'another fine password')
    expectRedirect(await browser.get('/dashboard/keys'), /^\/dashboard\/login/)
    expectRedirect(await other.browser.get('/dashboard/keys'), /^\/dashboard\/login/)
    const { page } = await signIn(account.email, 'another fine password')
    expectRedirect(page, '/dashboard')
  })

  it('when the owner changes the password: other browsers are signed out, this one stays', async () => {
    const account = await accountWithPassword(app, PASSWORD)
    const { browser } = await signIn(account.email, PASSWORD)
    const { browser: other } = await signIn(account.email, PASSWORD)
    await browser.get('/dashboard/account')
    const wrong = await browser.post('/dashboard/account/password', {
      current_password: 'not it at all, sorry',
      new_password: 'the new password here',
      repeat_password: 'the new password here',
    })
    expect(wrong.status).toBe(403)
    expect(textOf(wrong.html)).toContain('The current password is not right.')
    const short = await browser.post('/dashboard/account/password', {
      current_password: PASSWORD,
      new_password: 'short',
      repeat_password: 'short',
    })
    expect(short.status).toBe(400)
    expect(textOf(short.html)).toContain('A password must be 12 to 1024 characters long (this one has 5).')
    const changed = await browser.post('/dashboard/account/password', {
      current_password: PASSWORD,
      new_password: 'the new password here',
      repeat_password: 'the new password here',
    })
    expectRedirect(changed, '/dashboard/account')
    expect(textOf((await browser.get('/dashboard/account')).html)).toContain('Password changed.')
    expectRedirect(await other.get('/dashboard/account'), /^\/dashboard\/login/)
  })
})

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
