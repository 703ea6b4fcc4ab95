import { Hono } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { AppError } from '../errors.ts'
import type { Services } from '../services.ts'
import { registerAccount } from './account.tsx'
import { registerAssets } from './assets.ts'
import { registerAudiences } from './audiences.tsx'
import { registerBatches } from './batches.tsx'
import { registerConnections } from './connections.tsx'
import type { Dashboard, DashboardEnv } from './env.ts'
import { notFound, onError } from './errors.tsx'
import { registerHostedForms } from './hosted-forms.tsx'
import { registerKeys } from './keys.tsx'
import { registerSignIn, registerSignOut } from './login.tsx'
import { registerOutbox } from './outbox.tsx'
import { registerOverview } from './overview.tsx'
import { sameOrigin, securityHeaders, sessionFormToken } from './security.ts'
import { requireSession } from './session.ts'
import { registerTemplates } from './templates.tsx'

/** The dashboard (`/dashboard/...`): server-rendered pages for an account's owner, behind a sign-in. */
export function createDashboard(services: Services): Dashboard {
  const app = new Hono<DashboardEnv>()
  app.onError(onError)
  app.notFound(notFound)
  app.use(async (c, next) => {
    c.set('services', services)
    await next()
  })
  app.use(
    securityHeaders,
    sameOrigin,
    bodyLimit({
      maxSize: services.config.bodyLimitBytes,
      onError: () => {
        throw new AppError(
          'PAYLOAD_TOO_LARGE',
          `The form is larger than ${Math.floor(services.config.bodyLimitBytes / 1024 / 1024)} MiB`,
        )
      },
    }),
  )
  registerAssets(app)
  registerSignIn(app)
  registerSignOut(app)
  // `/dashboard/*` covers `/dashboard` too.
  app.use('/dashboard/*', requireSession, sessionFormToken)
  registerOverview(app)
  registerConnections(app)
  registerKeys(app)
  registerOutbox(app)
  registerBatches(app)
  registerAudiences(app)
  registerTemplates(app)
  registerHostedForms(app)
  registerAccount(app)
  return app
}
