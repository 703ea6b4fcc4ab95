import { bodyLimit } from 'hono/body-limit'
import { createMiddleware } from 'hono/factory'
import { AppError } from '../app-error.ts'
import type { Config } from '../config.ts'
import { API_BASE, type AppEnv } from './env.ts'

/** The operations whose bodies carry an email's attachments, under the API's base. */
const MAIL_PATHS = new Set(['/send', '/enqueue', '/send/batch'].map((path) => `${API_BASE}${path}`))

/**
 * The API's body limits: the mail operations take bodies as large as attachments need
 * (`mailBodyLimitBytes`), every other operation the service's body limit, or its own smaller one
 * (json-body.ts, `maxBytes`).
 */
export function limitApiBodySize(config: Pick<Config, 'bodyLimitBytes' | 'mailBodyLimitBytes'>) {
  const mail = limitBodySize(config.mailBodyLimitBytes)
  const other = limitBodySize(config.bodyLimitBytes)
  return createMiddleware<AppEnv>((c, next) => (MAIL_PATHS.has(c.req.path) ? mail : other)(c, next))
}

/**
 * Refuses a request body larger than `maxBytes` with 413 PAYLOAD_TOO_LARGE. A body whose
 * Content-Length says its size (and no Transfer-Encoding, so the HTTP parser reads no more than
 * that) is judged by the header alone, without touching `c.req.raw.body`: on @hono/node-server
 * that would build a full fetch Request (with its stream and AbortSignal) per request, where
 * reading the body later takes it from the socket directly. A body of unknown size (chunked) is
 * counted as it streams, by Hono's own bodyLimit.
 */
export function limitBodySize(maxBytes: number) {
  const tooLarge = () => {
    throw new AppError('PAYLOAD_TOO_LARGE', `The request body is larger than ${maxBytes} bytes`)
  }
  const streamed = bodyLimit({ maxSize: maxBytes, onError: tooLarge })
  return createMiddleware<AppEnv>(async (c, next) => {
    if (c.req.method === 'GET' || c.req.method === 'HEAD') return next()
    const length = c.req.header('content-length')
    if (length === undefined || c.req.header('transfer-encoding') !== undefined) return streamed(c, next)
    if (Number.parseInt(length, 10) > maxBytes) tooLarge()
    return next()
  })
}
