import { bodyLimit } from 'hono/body-limit'
import { createMiddleware } from 'hono/factory'
import { AppError } from '../errors.ts'
import type { AppEnv } from './env.ts'

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
