import { createHash, timingSafeEqual } from 'node:crypto'
import type { OpenAPIHono } from '@hono/zod-openapi'
import { operationalState } from '../db/gauges.ts'
import type { Services } from '../services.ts'
import type { AppEnv } from './env.ts'

const BEARER = /^Bearer +(\S+) *$/i

/**
 * GET /metrics: Prometheus's text format. With MAILROOM_METRICS_TOKEN set, a scrape must say
 * `Authorization: Bearer <token>` (compared in constant time); otherwise it is open, like
 * /health, to whoever can reach the port.
 */
export function registerMetrics(app: OpenAPIHono<AppEnv>, services: Services): void {
  const { metricsToken } = services.config
  const expected = metricsToken === undefined ? undefined : digest(metricsToken)
  app.get('/metrics', async (c) => {
    if (expected) {
      const given = BEARER.exec(c.req.header('authorization') ?? '')?.[1]
      if (!given || !timingSafeEqual(digest(given), expected)) {
        return c.text('A bearer token is required (MAILROOM_METRICS_TOKEN)\n', 401, {
          'WWW-Authenticate': 'Bearer realm="metrics"',
        })
      }
    }
    const text = await services.metrics.render(await operationalState(services.sql))
    return c.text(text, 200, { 'Content-Type': services.metrics.registry.contentType })
  })
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest()
}
