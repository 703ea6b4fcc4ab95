/**
 * The document's `x-error-catalog` → the error catalog of the service (src/generated/errors.ts)
 * and of the SDK (sdk/src/generated/errors.ts, its `api` entries only).
 *
 * The catalog is checked against the rest of the document, so that the two cannot drift:
 * `StandardError.code` and `SimpleError.error` list exactly the `api` entries of their shape,
 * `TemplateLimitError.error` is the template-limit entry's text, and every error example of a
 * response uses a catalogued code or text.
 */
import { child, fail, isObject, type Json, type JsonObject, literal } from './json-schema.ts'

const BODIES = ['standard', 'simple', 'template-limit', 'validation'] as const
type Body = (typeof BODIES)[number]
const STATUSES = [400, 401, 403, 404, 409, 413, 422, 429, 500]

export interface CatalogEntry {
  code: string
  status: number
  body: Body
  /** The fixed text of a simple or template-limit body. */
  error?: string
  description: string
  api: boolean
}

const POINTER = '#/x-error-catalog'

export function readCatalog(doc: JsonObject): CatalogEntry[] {
  const catalog = doc['x-error-catalog']
  if (!isObject(catalog)) fail(POINTER, 'expected an object with `api` and `operator`')
  const unknown = Object.keys(catalog).filter((k) => k !== 'api' && k !== 'operator')
  if (unknown.length) fail(POINTER, `unknown keys ${unknown.join(', ')}`)
  const entries = [
    ...section(catalog.api, child(POINTER, 'api'), true),
    ...section(catalog.operator, child(POINTER, 'operator'), false),
  ]
  const seen = new Set<string>()
  for (const entry of entries) {
    if (seen.has(entry.code)) fail(POINTER, `${entry.code} is declared twice`)
    seen.add(entry.code)
  }
  checkAgainstDocument(doc, entries)
  return entries
}

function section(value: Json | undefined, pointer: string, api: boolean): CatalogEntry[] {
  if (!isObject(value)) fail(pointer, 'expected an object of error entries')
  return Object.entries(value).map(([code, raw]) => {
    const at = child(pointer, code)
    if (!/^[A-Z][A-Z0-9_]*$/.test(code)) fail(at, 'codes are UPPER_SNAKE_CASE')
    if (!isObject(raw)) fail(at, 'expected an object')
    const { status, body = 'standard', error, description, ...rest } = raw
    if (Object.keys(rest).length) fail(at, `unknown keys ${Object.keys(rest).join(', ')}`)
    if (typeof status !== 'number' || !STATUSES.includes(status)) {
      fail(child(at, 'status'), `expected one of ${STATUSES.join(', ')}`)
    }
    if (!BODIES.includes(body as Body)) fail(child(at, 'body'), `expected one of ${BODIES.join(', ')}`)
    if (!api && body !== 'standard') fail(child(at, 'body'), 'operator errors use the standard body')
    const needsText = body === 'simple' || body === 'template-limit'
    if (needsText !== (typeof error === 'string')) {
      fail(
        child(at, 'error'),
        needsText ? 'a simple body needs its fixed text' : 'only simple bodies have a text',
      )
    }
    if (typeof description !== 'string' || !description) fail(child(at, 'description'), 'required')
    return {
      code,
      status,
      body: body as Body,
      ...(typeof error === 'string' ? { error } : {}),
      description,
      api,
    }
  })
}

function checkAgainstDocument(doc: JsonObject, entries: CatalogEntry[]): void {
  const api = entries.filter((e) => e.api)
  const codes = api.filter((e) => e.body === 'standard').map((e) => e.code)
  const texts = api.filter((e) => e.body === 'simple').map((e) => e.error as string)
  const schemas = (isObject(doc.components) && doc.components.schemas) || {}
  const property = (schema: string, name: string) => {
    const s = isObject(schemas) ? schemas[schema] : undefined
    const props = isObject(s) && isObject(s.properties) ? s.properties[name] : undefined
    return isObject(props) ? props : {}
  }
  sameSet(
    property('StandardError', 'code').enum,
    codes,
    '#/components/schemas/StandardError/properties/code/enum',
  )
  sameSet(
    property('SimpleError', 'error').enum,
    texts,
    '#/components/schemas/SimpleError/properties/error/enum',
  )
  const limit = api.find((e) => e.body === 'template-limit')
  if (property('TemplateLimitError', 'error').const !== limit?.error) {
    fail('#/components/schemas/TemplateLimitError/properties/error/const', 'must be the catalog text')
  }
  const known = new Set<Json>([...codes, ...texts, limit?.error ?? ''])
  const responses =
    isObject(doc.components) && isObject(doc.components.responses) ? doc.components.responses : {}
  for (const [name, response] of Object.entries(responses)) {
    const content =
      isObject(response) && isObject(response.content) ? response.content['application/json'] : {}
    const examples = isObject(content) && isObject(content.examples) ? content.examples : {}
    for (const [exampleName, example] of Object.entries(examples)) {
      const value = isObject(example) && isObject(example.value) ? example.value : {}
      const said = 'code' in value ? value.code : typeof value.error === 'string' ? value.error : undefined
      if (said !== undefined && !known.has(said)) {
        fail(
          `#/components/responses/${name}/content/application~1json/examples/${exampleName}`,
          `${literal(said)} is not in the error catalog`,
        )
      }
    }
  }
}

function sameSet(actual: Json | undefined, expected: string[], pointer: string): void {
  const list = Array.isArray(actual) ? actual : []
  const missing = expected.filter((v) => !list.includes(v))
  const extra = list.filter((v) => typeof v !== 'string' || !expected.includes(v))
  if (missing.length || extra.length) {
    fail(
      pointer,
      `must list the catalog's values (missing: ${literal(missing)}, not catalogued: ${literal(extra)})`,
    )
  }
}

function entrySource(entry: CatalogEntry, withApiFlag: boolean): string {
  const fields = [`status: ${entry.status}`, `body: ${literal(entry.body)}`]
  if (entry.error !== undefined) fields.push(`error: ${literal(entry.error)}`)
  if (withApiFlag) fields.push(`api: ${entry.api}`)
  return `/** ${entry.description.replaceAll('*/', '*\\/')} */\n${entry.code}: { ${fields.join(', ')} },`
}

const BODY_TYPE = `/** How an error's body is shaped (see the specification's "Errors"). */
export type ErrorBodyShape = ${BODIES.map(literal).join(' | ')}`

const ENTRY_TYPE = (
  withApiFlag: boolean,
) => `/** One error: its HTTP status, body shape, and (simple bodies) fixed text. */
export interface ErrorCatalogEntry {
  status: ${STATUSES.join(' | ')}
  body: ErrorBodyShape
  error?: string${withApiFlag ? '\n  /** Answered by the API (otherwise only by the operator command and the dashboard). */\n  api: boolean' : ''}
}`

/** src/generated/errors.ts: every entry, with whether the API answers it. */
export function serviceCatalogSource(entries: CatalogEntry[]): string {
  return `${BODY_TYPE}

${ENTRY_TYPE(true)}

/** Every error Mailroom answers. */
export const ERROR_CATALOG = {
${entries.map((e) => entrySource(e, true)).join('\n')}
} as const satisfies Record<string, ErrorCatalogEntry>

export type ErrorCode = keyof typeof ERROR_CATALOG
`
}

/** sdk/src/generated/errors.ts: the errors the API answers. */
export function sdkCatalogSource(entries: CatalogEntry[]): string {
  return `${BODY_TYPE}

${ENTRY_TYPE(false)}

/** Every error the Mailroom API answers. */
export const API_ERRORS = {
${entries
  .filter((e) => e.api)
  .map((e) => entrySource(e, false))
  .join('\n')}
} as const satisfies Record<string, ErrorCatalogEntry>

/** The code of every error the API answers (a simple body's code is the catalog's name for it). */
export type ApiErrorCode = keyof typeof API_ERRORS
`
}
