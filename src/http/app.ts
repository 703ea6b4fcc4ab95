import { OpenAPIHono } from '@hono/zod-openapi'
import { Scalar } from '@scalar/hono-api-reference'
import { bodyLimit } from 'hono/body-limit'
import { standardError } from '../errors.ts'
import type { Services } from '../services.ts'
import { registerAudiences } from './audiences/index.ts'
import { requireApiKey } from './auth.ts'
import { registerBatches } from './batches/index.ts'
import { registerEmail } from './email/index.ts'
import type { Api, AppEnv } from './env.ts'
import { notFound, onError, validationHook } from './errors.ts'
import { refuseNulCharacters } from './nul-guard.ts'
import { loadOpenApiDocument } from './openapi-document.ts'
import { registerTemplates } from './templates/index.ts'

export function createApp(services: Services): OpenAPIHono<AppEnv> {
  const document = loadOpenApiDocument()
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  app.onError(onError)
  app.notFound(notFound)
  app.use(async (c, next) => {
    c.set('services', services)
    await next()
  })

  app.get('/health', async (c) => {
    await services.sql`select 1`
    return c.json({ status: 'ok' })
  })
  app.get('/v1/openapi.json', (c) => c.json(document))
  app.get('/reference', Scalar({ url: '/v1/openapi.json', pageTitle: 'Mailroom API reference' }))

  const api: Api = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  api.use(
    requireApiKey,
    bodyLimit({
      maxSize: services.config.bodyLimitBytes,
      onError: () => {
        throw standardError(
          413,
          'PAYLOAD_TOO_LARGE',
          `The request body is larger than ${services.config.bodyLimitBytes} bytes`,
        )
      },
    }),
    refuseNulCharacters,
  )
  registerEmail(api)
  registerTemplates(api)
  registerAudiences(api)
  registerBatches(api)
  app.route('/v1', api)
  return app
}
