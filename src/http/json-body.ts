import type { RouteConfig } from '@hono/zod-openapi'
import { createMiddleware } from 'hono/factory'
import { AppError, invalidInput } from '../errors.ts'
import type { AppEnv } from './env.ts'

/** A JSON body deeper than this answers the validation body (the rulings' "Bounds"). */
export const MAX_JSON_DEPTH = 64

const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i
const OPEN = new Set([0x5b, 0x7b]) // [ {
const CLOSE = new Set([0x5d, 0x7d]) // ] }
const QUOTE = 0x22
const BACKSLASH = 0x5c

/**
 * How deeply a JSON text nests, read in one pass over its characters (strings skipped), so that
 * neither the parser nor any walk over the value ever meets a deeper one. Malformed text is the
 * parser's to refuse; this only counts.
 */
export function jsonTextDepth(text: string): number {
  let depth = 0
  let deepest = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (inString) {
      if (code === BACKSLASH) i++
      else if (code === QUOTE) inString = false
    } else if (code === QUOTE) inString = true
    else if (OPEN.has(code)) deepest = Math.max(deepest, ++depth)
    else if (CLOSE.has(code)) depth--
  }
  return deepest
}

/**
 * What a route checks of its body as sent, before the generated validator looks at any item:
 * the count limits (rulings, "Bounds"). It may return the body the validator is to see instead.
 */
export type BodyPrecheck = (body: unknown) => unknown

/**
 * `route` with its JSON body read, refused when nested more than MAX_JSON_DEPTH levels, parsed,
 * and put through `precheck`, before its validator runs (which parses the text Hono keeps again:
 * linear work, and never on a body deeper than the bound). A body that is not declared as JSON
 * is left to the validator.
 */
export function boundedBody<R extends RouteConfig>(route: R, precheck?: BodyPrecheck): R {
  const check = createMiddleware<AppEnv>(async (c, next) => {
    const type = c.req.header('content-type')?.split(';')[0]?.trim() ?? ''
    if (JSON_MEDIA_TYPE.test(type)) {
      const text = await c.req.text()
      if (jsonTextDepth(text) > MAX_JSON_DEPTH) {
        throw invalidInput([
          {
            path: [],
            message: `The JSON body is nested more than ${MAX_JSON_DEPTH} levels deep`,
            code: 'too_big',
          },
        ])
      }
      let body: unknown
      try {
        body = JSON.parse(text)
      } catch {
        throw new AppError('INVALID_JSON', 'The request body is not valid JSON')
      }
      const checked = precheck ? precheck(body) : body
      // Hono parses the cached text again for the validator: a replaced body replaces the text.
      // (The cache holds promises, whatever its declared type says.)
      if (checked !== body) {
        const cache = c.req.bodyCache as Record<string, Promise<unknown>>
        cache.text = Promise.resolve(JSON.stringify(checked))
      }
    }
    await next()
  })
  return { ...route, middleware: [...[route.middleware ?? []].flat(), check] }
}
