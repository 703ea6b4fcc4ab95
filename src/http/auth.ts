import type { RouteConfig } from '@hono/zod-openapi'
import { createMiddleware } from 'hono/factory'
import { AppError } from '../errors.ts'
import { claimCaller } from '../keys/claim.ts'
import { API_BASE, type AppEnv } from './env.ts'

const BEARER = /^Bearer +(\S+) *$/i

/**
 * Every API operation: `Authorization: Bearer <API_KEY>`, with the specification's two 401
 * bodies. The `vouching` routes may go ahead on the caller remembered from an earlier request
 * with the key, since their statements check it (see CallerClaim); whatever they answer without
 * having had it checked waits for the database's word first, so a key revoked meanwhile still
 * gets its 401, and before any 400.
 */
export function requireApiKey(vouching: RouteConfig[]) {
  const routes = new Set(vouching.map((r) => `${r.method.toUpperCase()} ${API_BASE}${r.path}`))
  return createMiddleware<AppEnv>(async (c, next) => {
    const match = BEARER.exec(c.req.header('authorization') ?? '')
    if (!match?.[1]) throw new AppError('MISSING_AUTHORIZATION')
    const remembering = c.req.matchedRoutes.some((r) => routes.has(`${r.method} ${r.path}`))
    const claim = await claimCaller(c.get('services').sql, match[1], remembering)
    c.set('claim', claim)
    if (claim.confirmed) c.set('caller', claim.caller)
    await next()
    c.set('caller', await claim.confirm())
  })
}
