import { type ErrorHandler, Hono, type NotFoundHandler } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { createMiddleware } from 'hono/factory'
import { AppError } from '../errors.ts'
import type { Logger } from '../log.ts'
import { interruption } from './request-guard.ts'

/** What anyone may post without a key or a session: 64 KiB holds 50 fields of a long message each. */
export const PUBLIC_BODY_LIMIT_BYTES = 64 * 1024

/** What sets one server-rendered app (the dashboard, the hosted pages) apart from the other. */
export interface PageAppOptions<E extends PageEnv<PageServices>> {
  onError: ErrorHandler<E>
  notFound: NotFoundHandler<E>
  /** Sent with every answer (the app's own content security policy among them). */
  headers: Record<string, string>
  /** Larger bodies are refused as PAYLOAD_TOO_LARGE with `tooLarge` as the message. */
  maxBodyBytes: number
  tooLarge: string
}

/** What the common ground needs of the service bag. */
export type PageServices = { log: Logger }

/** An app whose requests carry the service bag (`services`), whatever its type. */
export type PageEnv<S> = { Variables: { services: S } }

/**
 * The common ground of the server-rendered apps: their error pages, the services on every
 * request, security headers (and no caching unless a route says otherwise), and a body limit
 * answered as PAYLOAD_TOO_LARGE before anything reads the body whole. A request whose body
 * never arrived whole (cut at its deadline, or dropped by the client) is no failure of the
 * page: it is logged once, as what it is, and answered 408 if anyone is still listening.
 */
export function pageApp<S extends PageServices, E extends PageEnv<S>>(
  services: S,
  options: PageAppOptions<E>,
): Hono<E> {
  const app = new Hono<E>()
  app.onError((error, c) => {
    const interrupted = interruption(c.env)
    if (!interrupted) return options.onError(error, c)
    services.log.info(
      { method: c.req.method, path: c.req.path, outcome: interrupted },
      'request body not received',
    )
    return c.body(null, 408)
  })
  app.notFound(options.notFound)
  app.use(
    createMiddleware<PageEnv<S>>(async (c, next) => {
      c.set('services', services)
      await next()
      for (const [name, value] of Object.entries(options.headers)) c.header(name, value)
      if (!c.res.headers.has('Cache-Control')) c.header('Cache-Control', 'no-store')
    }),
    limitPageBody(options.maxBodyBytes, options.tooLarge),
  )
  return app
}

/** Refuses a body larger than `maxBytes` as PAYLOAD_TOO_LARGE, saying `tooLarge`. */
export function limitPageBody(maxBytes: number, tooLarge: string) {
  return bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new AppError('PAYLOAD_TOO_LARGE', tooLarge)
    },
  })
}
