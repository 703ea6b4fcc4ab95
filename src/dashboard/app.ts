import { pageApp } from '../net/page-app.ts'
import type { Services } from '../services.ts'
import { registerAccount } from './account.tsx'
import { registerAssets } from './assets.ts'
import { registerAudiences } from './audiences.tsx'
import { registerBatches } from './batches.tsx'
import { registerConnections } from './connections.tsx'
import type { Dashboard, DashboardEnv } from './env.ts'
import { registerHostedForms } from './hosted-forms.tsx'
import { registerKeys } from './keys.tsx'
import { registerSignIn, registerSignOut } from './login.tsx'
import { registerOutbox } from './outbox.tsx'
import { registerOverview } from './overview.tsx'
import { notFound, onError } from './refusals.tsx'
import { SECURITY_HEADERS, sameOrigin, sessionFormToken } from './security.ts'
import { requireSession } from './session.ts'
import { registerSmtpRelay } from './smtp-relay.tsx'
import { registerSuppressions } from './suppressions.tsx'
import { registerTemplates } from './templates.tsx'
import { registerWebhooks } from './webhooks.tsx'

/** The dashboard (`/dashboard/...`): server-rendered pages for an account's owner, behind a sign-in. */
export function createDashboard(services: Services): Dashboard {
  const app = pageApp<Services, DashboardEnv>(services, {
    onError,
    notFound,
    headers: SECURITY_HEADERS,
    maxBodyBytes: services.config.bodyLimitBytes,
    tooLarge: `The form is larger than ${Math.floor(services.config.bodyLimitBytes / 1024 / 1024)} MiB`,
    // Open to anyone: its body is a public page's, not the size of an import.
    publicPaths: ['/dashboard/login'],
  })
  app.use(sameOrigin)
  registerAssets(app)
  registerSignIn(app)
  registerSignOut(app)
  // `/dashboard/*` covers `/dashboard` too.
  app.use('/dashboard/*', requireSession, sessionFormToken)
  registerOverview(app)
  registerConnections(app)
  registerKeys(app)
  registerSmtpRelay(app)
  registerOutbox(app)
  registerBatches(app)
  registerAudiences(app)
  registerSuppressions(app)
  registerTemplates(app)
  registerHostedForms(app)
  registerWebhooks(app)
  registerAccount(app)
  return app
}
