import { createMiddleware } from 'hono/factory'
import { AppError } from '../errors.ts'
import { authenticate } from '../keys/keys.ts'
import type { AppEnv } from './env.ts'

const BEARER = /^Bearer +(\S+) *$/i

/** Every API operation: `Authorization: Bearer <API_KEY>`, with the specification's two 401 bodies. */
export const requireApiKey = createMiddleware<AppEnv>(async (c, next) => {
  const match = BEARER.exec(c.req.header('authorization') ?? '')
  if (!match?.[1]) throw new AppError('MISSING_AUTHORIZATION')
  const caller = await authenticate(c.get('services').sql, match[1])
  if (!caller) throw new AppError('INVALID_API_KEY')
  c.set('caller', caller)
  await next()
})
