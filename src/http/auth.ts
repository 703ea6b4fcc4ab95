import type { RouteConfig } from '@hono/zod-openapi'
import { createMiddleware } from 'hono/factory'
import { AppError } from '../app-error.ts'
import { API_BASE, type AppEnv } from './env.ts'

const BEARER = /^Bearer +(\S+) *$/i

/**
 * Every API operation: `Authorization: Bearer <API_KEY>`, with the specification's two 401
 * bodies. The `rechecking` routes may go ahead on the key's caller as cached from an earlier
 * request, since their statements recheck it (src/fast-path/README.md); whatever they answer
 * without that recheck waits for the database's word first, so a key revoked meanwhile still
 * gets its 401, and before any 400.
 */
export function requireApiKey(rechecking: RouteConfig[]) {
  const routes = new Set(rechecking.map((r) => `${r.method.toUpperCase()} ${API_BASE}${r.path}`))
  return createMiddleware<AppEnv>(async (c, next) => {
    const match = BEARER.exec(c.req.header('authorization') ?? '')
    if (!match?.[1]) throw new AppError('MISSING_AUTHORIZATION')
    const useCache = c.req.matchedRoutes.some((r) => routes.has(`${r.method} ${r.path}`))
    const requestCaller = await c.get('services').fastPath.callers.callerOf(match[1], useCache)
    c.set('requestCaller', requestCaller)
    if (requestCaller.checked) c.set('caller', requestCaller.caller)
    await next()
    c.set('caller', await requestCaller.check())
  })
}
