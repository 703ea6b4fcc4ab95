/**
 * Signing in to the dashboard from a client address of a test's choosing, and the session
 * cookie a sign-in sets.
 */
import type { TestApp } from './app.ts'
import { client } from './dashboard.ts'

export const PASSWORD = 'a long enough password'
/** Ten password hashes, one at a time, on a loaded two-core machine. */
export const HASHES_TIMEOUT = 120_000

export function sessionCookieLine(headers: Headers): string {
  const line = headers.getSetCookie().find((l) => l.startsWith('mailroom_session='))
  if (!line) throw new Error('no session cookie was set')
  return line
}

/** Signs in through `app`, which trusts X-Forwarded-For, as if from `options.address`. */
export function signInThrough(app: TestApp) {
  return async (email: string, password: string, options: { next?: string; address?: string } = {}) => {
    const browser = client(app, { 'x-forwarded-for': `198.51.100.250, ${options.address ?? '192.0.2.1'}` })
    await browser.get(`/dashboard/login${options.next ? `?next=${encodeURIComponent(options.next)}` : ''}`)
    const page = await browser.post('/dashboard/login', { email, password, next: options.next ?? '' })
    return { browser, page }
  }
}
