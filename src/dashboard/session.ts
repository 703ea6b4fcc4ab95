import { createMiddleware } from 'hono/factory'
import { formToken, resumeSession } from '../accounts/sessions.ts'
import { sessionCookie } from './cookies.ts'
import type { DashboardContext, DashboardEnv } from './env.ts'

/** Sent by the dashboard's script when it refreshes part of a page: such a request leaves the page's message alone. */
export const LIVE_HEADER = 'x-mailroom-live'

/**
 * Every page but the sign-in page: without a live session, a redirect (303) to the sign-in page,
 * which returns to the page asked for afterwards.
 */
export const requireSession = createMiddleware<DashboardEnv>(async (c, next) => {
  const token = sessionCookie.get(c)
  const takeFlash = c.req.method === 'GET' && c.req.header(LIVE_HEADER) === undefined
  const session = token ? await resumeSession(c.get('services').sql, token, { takeFlash }) : undefined
  if (!token || !session) {
    if (token) sessionCookie.clear(c)
    return c.redirect(signInAddress(c), 303)
  }
  c.set('session', session)
  c.set('formToken', formToken(token))
  await next()
})

function signInAddress(c: DashboardContext): string {
  const url = new URL(c.req.url)
  const back = url.pathname + url.search
  if (c.req.method !== 'GET' || safeNext(back) === '/dashboard') return '/dashboard/login'
  return `/dashboard/login?next=${encodeURIComponent(back)}`
}

const BASE = 'http://dashboard.invalid'

/** Where to go after signing in: a dashboard page, never another site (no open redirect). */
export function safeNext(raw: string | undefined): string {
  if (!raw?.startsWith('/') || raw.startsWith('//') || raw.includes('\\')) return '/dashboard'
  const url = new URL(raw, BASE)
  const inside = url.pathname === '/dashboard' || url.pathname.startsWith('/dashboard/')
  const signing = /^\/dashboard\/log(in|out)(\/|$)/.test(url.pathname)
  if (url.origin !== BASE || !inside || signing) return '/dashboard'
  return url.pathname + url.search
}
