import { PUBLIC_BODY_LIMIT_BYTES, pageApp } from '../net/page-app.ts'
import type { Services } from '../services.ts'
import type { Hosted, HostedEnv } from './env.ts'
import { registerForms } from './form-submissions.tsx'
import { registerHostedAssets } from './layout.tsx'
import { notFound, onError } from './refusals.tsx'
import { registerSignup } from './signup.tsx'
import { registerUnsubscribe } from './unsubscribe.tsx'

/** Public submissions are small. */
export const HOSTED_BODY_LIMIT_BYTES = PUBLIC_BODY_LIMIT_BYTES

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

/** The hosted pages (`/signup/...`, `/forms/...`, `/unsubscribe/...`): public, hostile by default. */
export function createHosted(services: Services): Hosted {
  const app = pageApp<Services, HostedEnv>(services, {
    onError,
    notFound,
    headers: {
      'Content-Security-Policy': CONTENT_SECURITY_POLICY,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
    },
    maxBodyBytes: HOSTED_BODY_LIMIT_BYTES,
    tooLarge: `A submission is at most ${HOSTED_BODY_LIMIT_BYTES / 1024} KiB`,
  })
  registerHostedAssets(app)
  registerSignup(app)
  registerForms(app)
  registerUnsubscribe(app)
  return app
}
