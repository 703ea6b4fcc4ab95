import { Hono } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { createMiddleware } from 'hono/factory'
import { AppError } from '../errors.ts'
import type { Services } from '../services.ts'
import type { Hosted, HostedEnv } from './env.ts'
import { notFound, onError } from './errors.tsx'
import { registerForms } from './forms.tsx'
import { registerHostedAssets } from './layout.tsx'
import { registerSignup } from './signup.tsx'
import { registerUnsubscribe } from './unsubscribe.tsx'

/** Public submissions are small: 64 KiB holds 50 fields of a long message each. */
export const HOSTED_BODY_LIMIT_BYTES = 64 * 1024

/**
 * Nothing of another site runs or loads on these pages (they have no script at all); they may
 * not be framed; forms post to this service and its answers may redirect anywhere the form's
 * owner set.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ')

const securityHeaders = createMiddleware<HostedEnv>(async (c, next) => {
  await next()
  c.header('Content-Security-Policy', CONTENT_SECURITY_POLICY)
  c.header('X-Content-Type-Options', 'nosniff')
  c.header('Referrer-Policy', 'no-referrer')
  if (!c.res.headers.has('Cache-Control')) c.header('Cache-Control', 'no-store')
})

/** The hosted pages (`/signup/...`, `/forms/...`, `/unsubscribe/...`): public, hostile by default. */
export function createHosted(services: Services): Hosted {
  const app = new Hono<HostedEnv>()
  app.onError(onError)
  app.notFound(notFound)
  app.use(async (c, next) => {
    c.set('services', services)
    await next()
  })
  app.use(
    securityHeaders,
    bodyLimit({
      maxSize: HOSTED_BODY_LIMIT_BYTES,
      onError: () => {
        throw new AppError(
          'PAYLOAD_TOO_LARGE',
          `A submission is at most ${HOSTED_BODY_LIMIT_BYTES / 1024} KiB`,
        )
      },
    }),
  )
  registerHostedAssets(app)
  registerSignup(app)
  registerForms(app)
  registerUnsubscribe(app)
  return app
}
