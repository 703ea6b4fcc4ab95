import type { RouteConfig } from '@hono/zod-openapi'
import type { Context } from 'hono'
import { createMiddleware } from 'hono/factory'
import { unstorableTextIssues } from '../db/storable-text.ts'
import { AppError, invalidInput } from '../errors.ts'
import { limitBodySize } from './body-limit.ts'
import { LARGE_BODY_CHARS, takeTurn } from './body-turns.ts'
import type { AppEnv } from './env.ts'

/** A JSON body deeper than this answers the validation body (the rulings' "Bounds"). */
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
const QUOTE = 0x22
const BACKSLASH = 0x5c
const COMMA = 0x2c
const OPEN_ARRAY = 0x5b
const OPEN_OBJECT = 0x7b
const CLOSE_ARRAY = 0x5d
const CLOSE_OBJECT = 0x7d

/** Which bound a JSON text passes first, if any. */
export type JsonTextExcess = 'depth' | 'values' | 'keys' | undefined

export interface JsonTextBounds {
  maxDepth: number
  /** Keys and array elements in the whole text. */
  maxValues: number
  /** Keys in any one object: a parser's cost for each key of an object grows past a thousand or so. */
  maxKeys: number
}

/**
 * Which of `bounds` a JSON text passes, read in one pass over its characters (strings skipped)
 * that stops at the first bound passed, so that the parser never meets a body whose size in
 * values it has not been told. A value is counted at each comma and at the first item of each
 * container. Malformed text is the parser's to refuse; this only counts.
 */
export function jsonTextExcess(text: string, bounds: JsonTextBounds): JsonTextExcess {
  const { maxDepth, maxValues, maxKeys } = bounds
  // Per level of nesting: whether it is an object, and how many keys it has so far.
  const isObject = new Uint8Array(maxDepth + 1)
  const keys = new Uint32Array(maxDepth + 1)
  let depth = 0
  let values = 0
  let opened = false
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code <= 0x20) continue
    if (code === CLOSE_ARRAY || code === CLOSE_OBJECT) {
      depth--
      opened = false
      continue
    }
    if (code === COMMA || opened) {
      opened = false
      if (++values > maxValues) return 'values'
      if (isObject[depth] === 1) {
        const held = (keys[depth] ?? 0) + 1
        if (held > maxKeys) return 'keys'
        keys[depth] = held
      }
      if (code === COMMA) continue
    }
    if (code === QUOTE) i = closingQuote(text, i)
    else if (code === OPEN_ARRAY || code === OPEN_OBJECT) {
      if (++depth > maxDepth) return 'depth'
      isObject[depth] = code === OPEN_OBJECT ? 1 : 0
      keys[depth] = 0
      opened = true
    }
  }
  return undefined
}

/** Where the string opened at `start` ends (the text's end when it never does). */
function closingQuote(text: string, start: number): number {
  let end = text.indexOf('"', start + 1)
  while (end !== -1) {
    let backslashes = 0
    while (text.charCodeAt(end - 1 - backslashes) === BACKSLASH) backslashes++
    if (backslashes % 2 === 0) return end
    end = text.indexOf('"', end + 1)
  }
  return text.length
}

/**
 * What a route checks of its body as sent, before the generated validator looks at any item:
 * the count limits (rulings, "Bounds"). It may return the body the validator is to see instead.
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
      const text = await c.req.text()
      const large = text.length >= LARGE_BODY_CHARS
      const endTurn = large ? await takeTurn(c.get('claim').caller.accountId) : undefined
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
  const breadth = {
    maxDepth: MAX_JSON_DEPTH,
    maxValues: c.get('services').config.jsonMaxValues,
    maxKeys: MAX_JSON_OBJECT_KEYS,
  }
  refuseExcess(jsonTextExcess(text, breadth), breadth)
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

function refuseExcess(excess: JsonTextExcess, bounds: JsonTextBounds): void {
  if (excess === undefined) return
  const message = {
    depth: `The JSON body is nested more than ${bounds.maxDepth} levels deep`,
    values: `The JSON body holds more than ${bounds.maxValues} keys and array elements`,
    keys: `An object in the JSON body holds more than ${bounds.maxKeys} keys`,
  }[excess]
  throw invalidInput([{ path: [], message, code: 'too_big' }])
}
