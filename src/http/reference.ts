import type { OpenAPIHono } from '@hono/zod-openapi'
import { Scalar } from '@scalar/hono-api-reference'
import { packageFile, staticAsset } from '../net/static-asset.ts'
import { API_BASE, type AppEnv } from './env.ts'

/** Scalar's own browser bundle, from its npm package: the reference works with no internet access. */
const SCALAR_BUNDLE = staticAsset(
  packageFile('@scalar/api-reference', 'dist/browser/standalone.js'),
  '/reference/scalar.js',
  'text/javascript; charset=utf-8',
)

/** `GET /reference`: the interactive reference of the contract, loading nothing from another host. */
export function registerReference(app: OpenAPIHono<AppEnv>): void {
  app.get('/reference/scalar.js', (c) => SCALAR_BUNDLE.respond(c.req.raw))
  app.get(
    '/reference',
    Scalar(() => ({
      url: '/v1/openapi.json',
      pageTitle: 'Mailroom API reference',
      cdn: SCALAR_BUNDLE.href,
      // Its defaults fetch fonts from Scalar's servers, report usage, and offer an AI agent.
      withDefaultFonts: false,
      telemetry: false,
      agent: { disabled: true },
      showDeveloperTools: 'never',
      servers: [{ url: API_BASE, description: 'This Mailroom' }],
    })),
  )
}
