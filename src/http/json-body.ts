import type { RouteConfig } from '@hono/zod-openapi'
import type { Context } from 'hono'
import { createMiddleware } from 'hono/factory'
import { AppError, invalidInput } from '../app-error.ts'
import { unstorableTextIssues } from '../db/storable-text.ts'
import { limitBodySize } from './body-limit.ts'
import { LARGE_BODY_CHARS, takeTurn } from './body-turns.ts'
import type { AppEnv } from './env.ts'
import { type JsonTextBounds, JsonTextCounter, type JsonTextExcess } from './json-text.ts'

/** A JSON body deeper than this answers the validation body (docs/decisions.md, "Bounds and bad input"). */
export const MAX_JSON_DEPTH = 64

/**
 * No object of a JSON body holds more keys than this: the largest a valid body has is a
 * member's payload, whose 16 KiB hold about 2,300 distinct keys.
 */
export const MAX_JSON_OBJECT_KEYS = 10_000

/**
 * The body limit of operations whose bodies are a few short fields (audiences, webhook
 * endpoints): their largest valid body is a few KiB, and the service's body limit is for mail.
 */
export const SMALL_JSON_BODY_BYTES = 64 * 1024

const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i
/**
 * What a route checks of its body as sent, before the generated validator looks at any item:
 * the count limits (docs/decisions.md, "Limits on every request"). It may return the body the
 * validator is to see instead.
 */
export type BodyPrecheck = (body: unknown) => unknown

export interface BodyBounds {
  precheck?: BodyPrecheck
  /** The route's own body limit, below the service's (413 PAYLOAD_TOO_LARGE above). */
  maxBytes?: number
}

/**
 * `route` with its JSON body read, refused when nested more than MAX_JSON_DEPTH levels, holding
 * more keys and array elements than the service's `jsonMaxValues` or an object of more than
 * MAX_JSON_OBJECT_KEYS keys, parsed, and put through `precheck`, before its validator runs; a
 * large one in its account's turn (see body-turns.ts). A body that is not declared as JSON is
 * left to the validator.
 */
export function boundedBody<R extends RouteConfig>(route: R, bounds: BodyBounds = {}): R {
  const check = createMiddleware<AppEnv>(async (c, next) => {
    const type = c.req.header('content-type')?.split(';')[0]?.trim() ?? ''
    if (JSON_MEDIA_TYPE.test(type)) {
      const text = await countedText(c)
      const large = text.length >= LARGE_BODY_CHARS
      const endTurn = large ? await takeTurn(c.get('requestCaller').caller.accountId) : undefined
      try {
        takeBody(c, text, bounds.precheck)
      } finally {
        endTurn?.()
      }
    }
    await next()
  })
  const limit = bounds.maxBytes === undefined ? [] : [limitBodySize(bounds.maxBytes)]
  return { ...route, middleware: [...[route.middleware ?? []].flat(), ...limit, check] }
}

/**
 * The body's text bounded, parsed, put through `precheck` and walked for text PostgreSQL cannot
 * store. Hono's c.req.json() parses the text again on every call (the validator's, the
 * validation hook's): both get the body parsed here instead (zod builds what it returns anew,
 * so neither changes it), and the hook the walk's issues.
 */
function takeBody(c: Context<AppEnv>, text: string, precheck: BodyPrecheck | undefined): void {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    throw new AppError('INVALID_JSON', 'The request body is not valid JSON')
  }
  const checked = precheck ? precheck(body) : body
  c.req.json = <T>() => Promise.resolve(checked as T)
  c.set('unstorable', unstorableTextIssues(checked))
}

/**
 * The body's text, counted as it arrives: a body past a bound is refused there, the rest of it
 * neither waited for nor kept (it is drained, then its connection closed, after the answer).
 */
async function countedText(c: Context<AppEnv>): Promise<string> {
  const counter = new JsonTextCounter({
    maxDepth: MAX_JSON_DEPTH,
    maxValues: c.get('services').config.jsonMaxValues,
    maxKeys: MAX_JSON_OBJECT_KEYS,
  })
  const stream = c.req.raw.body
  if (!stream) return ''
  const decoder = new TextDecoder()
  const parts: string[] = []
  const reader = stream.getReader()
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    const part = decoder.decode(read.value, { stream: true })
    refuseExcess(counter.feed(part), counter.bounds)
    parts.push(part)
  }
  parts.push(decoder.decode())
  return parts.join('')
}

function refuseExcess(excess: JsonTextExcess, bounds: JsonTextBounds): void {
  if (excess === undefined) return
  const message = {
    depth: `The JSON body is nested more than ${bounds.maxDepth} levels deep`,
    values: `The JSON body holds more than ${bounds.maxValues} keys and array elements`,
    keys: `An object in the JSON body holds more than ${bounds.maxKeys} keys`,
  }[excess]
  throw invalidInput([{ path: [], message, code: 'too_big' }])
}
