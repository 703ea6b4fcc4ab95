/**
 * Signing in to the dashboard: what a new install says, pages without a session, the session a
 * sign-in starts, and every way a session ends.
 */
import { createHash } from 'node:crypto'
import { beforeAll, describe, expect, it } from 'vitest'
import type { Account } from '../../src/accounts/accounts.ts'
import { setPassword } from '../../src/accounts/passwords.ts'
import { safeNext } from '../../src/dashboard/session.ts'
import { useTestApp } from '../support/app.ts'
import { DAY, later, MINUTE } from '../support/clock.ts'
import {
  accountWithPassword,
  client,
  expectRedirect,
  signedIn,
  textOf,
  uniqueEmail,
} from '../support/dashboard.ts'
import { PASSWORD, sessionCookieLine, signInThrough } from '../support/sign-in.ts'

const app = useTestApp({ trustProxy: true })
const signIn = signInThrough(app)

let ACCOUNT: Account

beforeAll(async () => {
  ACCOUNT = await accountWithPassword(app, PASSWORD)
})

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
