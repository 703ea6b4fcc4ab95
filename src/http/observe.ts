import { randomUUID } from 'node:crypto'
import type { Context } from 'hono'
import { createMiddleware } from 'hono/factory'
import { matchedRoutes } from 'hono/route'
import { withRequestId } from '../log.ts'
import { interruption } from '../net/request-guard.ts'
import type { Services } from '../services.ts'
import type { AppEnv } from './env.ts'

/** A caller's X-Request-Id is kept when it is this safe to log and echo; otherwise one is made. */
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/**
 * Every request: its id (taken from X-Request-Id or made, echoed in the response), carried by
 * every log line written on its behalf and by the work it queues; then one access log line
 * (method, route, status, duration, account, request id; never the key or the body) and the
 * request's count and latency in the metrics. A request whose body never arrived whole has the
 * status its client got: 408 when it was cut at its deadline, `aborted` when the client left.
 */
export function observe(services: Services) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const started = performance.now()
    const given = c.req.header('x-request-id')
    const requestId = given && SAFE_REQUEST_ID.test(given) ? given : randomUUID()
    c.set('services', services)
    await withRequestId(requestId, async () => {
      await next()
      // On the response's own headers: c.header() would copy a finished response into a new
      // one, which @hono/node-server then writes out through a stream.
      c.res.headers.set('X-Request-Id', requestId)
      const seconds = (performance.now() - started) / 1000
      const route = routeOf(c)
      const interrupted = interruption(c.env)
      const status = interrupted === 'aborted' ? interrupted : interrupted ? 408 : c.res.status
      services.metrics.request(c.req.method, route, status, seconds)
      services.log[typeof status === 'number' && status >= 500 ? 'error' : 'info'](
        {
          method: c.req.method,
          route,
          status,
          durationMs: Math.round(seconds * 10_000) / 10,
          accountId: c.get('caller')?.accountId,
        },
        'request',
      )
    })
  })
}

/** The route's pattern (`/v1/audiences/:id`), never the raw path; `unmatched` for a 404 of no route. */
function routeOf(c: Context<AppEnv>): string {
  const handler = matchedRoutes(c).findLast((r) => r.method !== 'ALL')
  return handler?.path ?? 'unmatched'
}
