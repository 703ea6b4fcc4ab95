import path from 'node:path'
import { OpenAPIHono } from '@hono/zod-openapi'
import { ping } from '../db/sql.ts'
import { enqueueEmailRoute, sendEmailRoute } from '../generated/routes.ts'
import { servedBytes, staticAsset } from '../net/static-asset.ts'
import { PROJECT_ROOT } from '../project-root.ts'
import type { Services } from '../services.ts'
import { registerAudiences } from './audiences/index.ts'
import { requireApiKey } from './auth.ts'
import { registerBatches } from './batches/index.ts'
import { limitApiBodySize } from './body-limit.ts'
import { registerEmail } from './email/index.ts'
import { API_BASE, type Api, type AppEnv } from './env.ts'
import { notFound, onError, validationHook } from './error-responses.ts'
import { registerMetrics } from './metrics.ts'
import { observe } from './observe.ts'
import { loadOpenApiDocument } from './openapi-document.ts'
import { registerReference } from './reference.ts'
import { registerSuppressions } from './suppressions/index.ts'
import { registerTemplates } from './templates/index.ts'
import { registerWebhooks } from './webhooks/index.ts'

/** Asked for by every browser at the root, whichever page it shows: the dashboard's, a hosted one, the reference. */
const FAVICON = staticAsset(
  path.join(PROJECT_ROOT, 'src', 'http', 'assets', 'favicon.ico'),
  '/favicon.ico',
  'image/x-icon',
)

export function createApp(services: Services): OpenAPIHono<AppEnv> {
  // Serialized once, at start (it is large: serializing it for each request cost about 3 ms of
  // CPU, for anyone who asks), and revalidated by its ETag.
  const contractJson = Buffer.from(JSON.stringify(loadOpenApiDocument()))
  const contract = servedBytes(() => contractJson, '/v1/openapi.json', 'application/json')
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  app.onError(onError)
  app.notFound(notFound)
  app.use(observe(services))

  app.get('/health', async (c) => {
    await ping(services.sql)
    return c.json({ status: 'ok' })
  })
  registerMetrics(app, services)
  app.get(contract.path, (c) => contract.respond(c.req.raw))
  registerReference(app)
  app.get(FAVICON.path, (c) => FAVICON.respond(c.req.raw))

  const api: Api = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  api.use(requireApiKey([sendEmailRoute, enqueueEmailRoute]), limitApiBodySize(services.config))
  registerEmail(api)
  registerTemplates(api)
  registerAudiences(api)
  registerBatches(api)
  registerWebhooks(api)
  registerSuppressions(api)
  app.route(API_BASE, api)
  return app
}
