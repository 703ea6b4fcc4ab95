import { createMiddleware } from 'hono/factory'
import { simpleError } from '../errors.ts'
import { authenticate } from '../keys/keys.ts'
import type { AppEnv } from './env.ts'

const BEARER = /^Bearer +(\S+) *$/i

/** Every API operation: `Authorization: Bearer <API_KEY>`, with the specification's two 401 bodies. */
export const requireApiKey = createMiddleware<AppEnv>(async (c, next) => {
  const match = BEARER.exec(c.req.header('authorization') ?? '')
  if (!match?.[1]) throw simpleError(401, 'Missing or invalid Authorization header')
  const caller = await authenticate(c.get('services').sql, match[1])
  if (!caller) throw simpleError(401, 'Invalid or expired API token')
  c.set('caller', caller)
  await next()
})
