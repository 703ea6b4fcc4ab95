import { timingSafeEqual } from 'node:crypto'
import { createMiddleware } from 'hono/factory'
import { AppError } from '../app-error.ts'
import type { DashboardContext, DashboardEnv } from './env.ts'
import { readPostedFields } from './posted-fields.ts'

const SAFE_METHODS = new Set(['GET', 'HEAD'])

/**
 * Pages load nothing from another host and run only the dashboard's own script. Inline styles
 * are allowed for the HTML of emails shown in sandboxed frames (which inherit this policy);
 * their scripts never run, and their remote images are not fetched.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "frame-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "object-src 'none'",
].join('; ')

/** Sent with every page of the dashboard. */
export const SECURITY_HEADERS = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
}

function crossSite(): AppError {
  return new AppError(
    'CROSS_SITE_REQUEST',
    'This form was sent from another site, or from a page that is too old. Reload the page and try again.',
  )
}

/**
 * Refuses a state-changing request whose Origin is not the dashboard's own (the address it was
 * reached at, or MAILROOM_PUBLIC_URL); without an Origin, the browser's Sec-Fetch-Site says so.
 */
export const sameOrigin = createMiddleware<DashboardEnv>(async (c, next) => {
  if (!SAFE_METHODS.has(c.req.method)) {
    const own = [new URL(c.req.url).origin, new URL(c.get('services').config.publicUrl).origin]
    const origin = c.req.header('origin')
    const site = c.req.header('sec-fetch-site')
    const foreign =
      origin !== undefined ? !own.includes(origin) : site !== undefined && site !== 'same-origin'
    if (foreign) throw crossSite()
  }
  await next()
})

/** Refuses a state-changing request whose form does not carry `expected` as its token. */
export async function checkFormToken(c: DashboardContext, expected: string | undefined): Promise<void> {
  if (SAFE_METHODS.has(c.req.method)) return
  const sent = Buffer.from((await readPostedFields(c)).text('csrf'))
  const wanted = Buffer.from(expected ?? '')
  if (wanted.length === 0 || sent.length !== wanted.length || !timingSafeEqual(sent, wanted))
    throw crossSite()
}

/** Every state-changing request of a signed-in page carries the session's form token. */
export const sessionFormToken = createMiddleware<DashboardEnv>(async (c, next) => {
  await checkFormToken(c, c.get('formToken'))
  await next()
})
