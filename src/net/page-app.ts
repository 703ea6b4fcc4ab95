import { type ErrorHandler, Hono, type NotFoundHandler } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { createMiddleware } from 'hono/factory'
import { AppError } from '../errors.ts'

/** What sets one server-rendered app (the dashboard, the hosted pages) apart from the other. */
export interface PageAppOptions<E extends PageEnv<unknown>> {
  onError: ErrorHandler<E>
  notFound: NotFoundHandler<E>
  /** Sent with every answer (the app's own content security policy among them). */
  headers: Record<string, string>
  /** Larger bodies are refused as PAYLOAD_TOO_LARGE with `tooLarge` as the message. */
  maxBodyBytes: number
  tooLarge: string
}

/** An app whose requests carry the service bag (`services`), whatever its type. */
export type PageEnv<S> = { Variables: { services: S } }

/**
 * The common ground of the server-rendered apps: their error pages, the services on every
 * request, security headers (and no caching unless a route says otherwise), and a body limit
 * answered as PAYLOAD_TOO_LARGE before anything reads the body whole.
 */
export function pageApp<S, E extends PageEnv<S>>(services: S, options: PageAppOptions<E>): Hono<E> {
  const app = new Hono<E>()
  app.onError(options.onError)
  app.notFound(options.notFound)
  app.use(
    createMiddleware<PageEnv<S>>(async (c, next) => {
      c.set('services', services)
      await next()
      for (const [name, value] of Object.entries(options.headers)) c.header(name, value)
      if (!c.res.headers.has('Cache-Control')) c.header('Cache-Control', 'no-store')
    }),
    bodyLimit({
      maxSize: options.maxBodyBytes,
      onError: () => {
        throw new AppError('PAYLOAD_TOO_LARGE', options.tooLarge)
      },
    }),
  )
  return app
}
