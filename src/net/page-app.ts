import { type ErrorHandler, Hono, type NotFoundHandler } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { createMiddleware } from 'hono/factory'
import { AppError, invalidInput } from '../app-error.ts'
import type { Logger } from '../log.ts'
import { interruption } from './request-guard.ts'

/** What anyone may post without a key or a session: 64 KiB holds 50 fields of a long message each. */
export const PUBLIC_BODY_LIMIT_BYTES = 64 * 1024

/**
 * No page's form has more fields than this (the dashboard's have a few dozen at most, a hosted
 * form takes 50): a body of more is refused before it is parsed, which costs per field.
 */
export const MAX_FORM_FIELDS = 1000

/** What sets one server-rendered app (the dashboard, the hosted pages) apart from the other. */
export interface PageAppOptions<E extends PageEnv<PageServices>> {
  onError: ErrorHandler<E>
  notFound: NotFoundHandler<E>
  /** Sent with every answer (the app's own content security policy among them). */
  headers: Record<string, string>
  /** Larger bodies are refused as PAYLOAD_TOO_LARGE with `tooLarge` as the message. */
  maxBodyBytes: number
  tooLarge: string
  /** Paths open to anyone within an app behind a sign-in: their bodies are public ones. */
  publicPaths?: string[]
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
    limitPageBody(options),
    limitFormFields,
  )
  return app
}

/**
 * Refuses a form (urlencoded or multipart) of more than MAX_FORM_FIELDS fields, counted on its
 * bytes (separators or part boundaries) before anything parses it. The bytes are kept for the
 * parser, whole: a file in a multipart form is not text.
 */
const limitFormFields = createMiddleware(async (c, next) => {
  const type = c.req.header('content-type') ?? ''
  const boundary = /^multipart\/form-data;.*boundary="?([^";]+)/i.exec(type)?.[1]
  // n fields have n - 1 separators, or n + 1 boundaries (the last one closes the form).
  const [separator, most] = /^application\/x-www-form-urlencoded/i.test(type)
    ? ['&', MAX_FORM_FIELDS - 1]
    : [boundary && `--${boundary}`, MAX_FORM_FIELDS + 1]
  if (separator) {
    const bytes = Buffer.from(await c.req.arrayBuffer())
    let seen = 0
    for (let at = bytes.indexOf(separator); at !== -1; at = bytes.indexOf(separator, at + separator.length)) {
      if (++seen > most) {
        throw invalidInput([
          { path: [], message: `A form has at most ${MAX_FORM_FIELDS} fields`, code: 'too_big' },
        ])
      }
    }
  }
  await next()
})

/**
 * Refuses a body larger than the app's limit, or a public page's on `publicPaths`, as
 * PAYLOAD_TOO_LARGE. Both come before anything reads the body.
 */
function limitPageBody(options: Pick<PageAppOptions<never>, 'maxBodyBytes' | 'tooLarge' | 'publicPaths'>) {
  const limit = (maxSize: number, message: string) =>
    bodyLimit({
      maxSize,
      onError: () => {
        throw new AppError('PAYLOAD_TOO_LARGE', message)
      },
    })
  const own = limit(options.maxBodyBytes, options.tooLarge)
  const open = limit(PUBLIC_BODY_LIMIT_BYTES, `The form is larger than ${PUBLIC_BODY_LIMIT_BYTES / 1024} KiB`)
  return createMiddleware((c, next) => (options.publicPaths?.includes(c.req.path) ? open : own)(c, next))
}
