import { deleteCookie, getCookie, setCookie } from 'hono/cookie'
import type { CookieOptions } from 'hono/utils/cookie'
import { SESSION_LIFETIME } from '../accounts/sessions.ts'
import type { DashboardContext } from './env.ts'

/** The session's token. */
const SESSION = 'mailroom_session'
/** The sign-in form's token, echoed in the form: a page of another site cannot read or set it. */
const SIGN_IN = 'mailroom_sign_in'

function options(c: DashboardContext, maxAge?: number): CookieOptions {
  return {
    path: '/dashboard',
    httpOnly: true,
    sameSite: 'Lax',
    secure: c.get('services').config.publicUrl.startsWith('https:'),
    ...(maxAge === undefined ? {} : { maxAge }),
  }
}

export const sessionCookie = {
  get: (c: DashboardContext) => getCookie(c, SESSION),
  set: (c: DashboardContext, token: string) =>
    setCookie(c, SESSION, token, options(c, SESSION_LIFETIME.maxDays * 24 * 60 * 60)),
  clear: (c: DashboardContext) => deleteCookie(c, SESSION, options(c)),
}

export const signInCookie = {
  get: (c: DashboardContext) => getCookie(c, SIGN_IN),
  set: (c: DashboardContext, token: string) => setCookie(c, SIGN_IN, token, options(c)),
  clear: (c: DashboardContext) => deleteCookie(c, SIGN_IN, options(c)),
}
