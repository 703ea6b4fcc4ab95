/**
 * What the dashboard's request-level tests share: a client that keeps cookies and the form
 * token of the last page like a browser (requests go through the app in-process), and accounts
 * signed in without the cost of a password hash where signing in is not what is tested.
 */
import { expect } from 'vitest'
import { type Account, createAccount } from '../../src/accounts/accounts.ts'
import { createAccountWithPassword } from '../../src/accounts/passwords.ts'
import { startSession } from '../../src/accounts/sessions.ts'
import type { TestApp } from './app.ts'

/** The origin in-process requests are made at (the app sees http://localhost/...). */
export const ORIGIN = 'http://localhost'

export interface Page {
  status: number
  /** The Location header of a redirect. */
  location: string | null
  headers: Headers
  html: string
}

export interface PostOptions {
  /** The form token to send: the last page's by default; false for none. */
  token?: string | false
  /** The Origin header: the dashboard's own by default; false for none. */
  origin?: string | false
  headers?: Record<string, string>
}

export interface Client {
  get(path: string, headers?: Record<string, string>): Promise<Page>
  /** A form post (urlencoded, or multipart when given a FormData). */
  post(path: string, fields?: Record<string, string> | FormData, options?: PostOptions): Promise<Page>
  /** The form token of the last page that had one. */
  readonly token: string | undefined
  readonly cookies: Map<string, string>
}

export function client(
  app: Pick<TestApp, 'requestRoot'>,
  defaultHeaders: Record<string, string> = {},
): Client {
  const cookies = new Map<string, string>()
  let token: string | undefined
  const send = async (path: string, method: string, body?: URLSearchParams | FormData, extra = {}) => {
    const cookie = [...cookies].map(([name, value]) => `${name}=${value}`).join('; ')
    const res = await app.requestRoot(path, {
      method,
      ...(body ? { body } : {}),
      headers: { ...defaultHeaders, ...(cookie ? { cookie } : {}), ...extra },
    })
    for (const line of res.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';')
      const [name = '', value = ''] = pair.split('=')
      const gone = attributes.some((a) => /^\s*max-age=0$/i.test(a)) || value === ''
      if (gone) cookies.delete(name.trim())
      else cookies.set(name.trim(), value)
    }
    const html = await res.text()
    const found = /name="csrf" value="([^"]+)"/.exec(html)
    if (found) token = found[1]
    return { status: res.status, location: res.headers.get('location'), headers: res.headers, html }
  }
  return {
    get: (path, headers = {}) => send(path, 'GET', undefined, headers),
    post(path, fields = {}, options = {}) {
      const body = fields instanceof FormData ? fields : new URLSearchParams(fields)
      const formToken = options.token === undefined ? token : options.token
      if (formToken !== false && formToken !== undefined && !body.has('csrf')) body.set('csrf', formToken)
      const origin = options.origin === undefined ? ORIGIN : options.origin
      return send(path, 'POST', body, { ...(origin === false ? {} : { origin }), ...options.headers })
    },
    get token() {
      return token
    },
    cookies,
  }
}

let seq = 0

export function uniqueEmail(label: string): string {
  return `${label}${++seq}-${process.pid}@example.com`
}

/** An account with a password (one scrypt hash: about a second). */
export function accountWithPassword(
  app: TestApp,
  password: string,
  plan: 'free' | 'pro' = 'free',
): Promise<Account> {
  return createAccountWithPassword(app.services.sql, { email: uniqueEmail('dash-owner'), plan, password })
}

/** A client signed in to a new account (or `account`) through a session made directly. */
export async function signedIn(
  app: TestApp,
  options: { plan?: 'free' | 'pro'; account?: Account } = {},
): Promise<{ browser: Client; account: Account }> {
  const account =
    options.account ??
    (await createAccount(app.services.sql, {
      email: uniqueEmail('dash-owner'),
      plan: options.plan ?? 'free',
    }))
  const { token } = await startSession(app.services.sql, account.id)
  const browser = client(app)
  browser.cookies.set('mailroom_session', token)
  // A page first, for its form token.
  const home = await browser.get('/dashboard')
  expect(home.status).toBe(200)
  return { browser, account }
}

/** The page's text with tags removed and white space collapsed: what a person reads. */
export function textOf(html: string): string {
  return html
    .replace(/<(script|style)[\s\S]*?<\/\1>/g, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ')
    .trim()
}

/** A redirect (303) to `location`. */
export function expectRedirect(page: Page, location: string | RegExp): void {
  expect(page.status).toBe(303)
  if (typeof location === 'string') expect(page.location).toBe(location)
  else expect(page.location).toMatch(location)
}
