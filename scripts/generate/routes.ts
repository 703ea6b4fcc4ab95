/**
 * The OpenAPI document → the source of src/generated/routes.ts: one zod const per component
 * schema (in $ref dependency order), one `createRoute` per operation, and the `operations` list.
 */
import {
  child,
  fail,
  isObject,
  type Json,
  type JsonObject,
  Keywords,
  key,
  literal,
  schemaConst,
  schemaRefName,
} from './json-schema.ts'
import { MAILBOX_SOURCE, numeric, zodFor } from './zod.ts'

/**
 * zod's own message for a failed union is a bare "Invalid input". This names what was missing
 * or expected, or, when the value had the right shape but a bad part, that part's problem.
 */
const UNION_MESSAGE = `function unionMessage(expected: string) {
  return (issue: { input?: unknown; errors?: { path: PropertyKey[]; message: string }[][] }) => {
    if (issue.input === undefined) return 'Required'
    const inner = issue.errors?.flat().find((error) => error.path.length > 0)
    return inner ? \`\${inner.path.map(String).join('.')}: \${inner.message}\` : expected
  }
}`

/**
 * The refinement of a free-form value bounded by `x-max-json-bytes` and `x-max-depth`: its
 * nesting is measured without recursion first (JSON.stringify recurses), then its size as UTF-8
 * JSON text. The value itself is level 1.
 */
const JSON_BOUNDS = `function jsonBounds(maxBytes: number, maxDepth: number) {
  return (value: unknown, ctx: { addIssue: (issue: { code: 'custom'; message: string }) => void }) => {
    if (jsonDepth(value) > maxDepth) {
      ctx.addIssue({ code: 'custom', message: \`Nested more than \${maxDepth} levels deep\` })
    } else if (Buffer.byteLength(JSON.stringify(value)) > maxBytes) {
      ctx.addIssue({ code: 'custom', message: \`Longer than \${maxBytes} bytes as JSON text\` })
    }
  }
}

export function jsonDepth(value: unknown): number {
  let deepest = 0
  const pending: [unknown, number][] = [[value, 1]]
  for (let item = pending.pop(); item; item = pending.pop()) {
    const [current, depth] = item
    if (current === null || typeof current !== 'object') continue
    deepest = Math.max(deepest, depth)
    for (const child of Object.values(current)) pending.push([child, depth + 1])
  }
  return deepest
}`

export const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']

export function routesSource(doc: JsonObject): string {
  const parts = [
    "import { createRoute, z } from '@hono/zod-openapi'",
    UNION_MESSAGE,
    JSON_BOUNDS,
    MAILBOX_SOURCE,
  ]
  parts.push(...componentSchemas(doc))
  const operations: { operationId: string; method: string; path: string }[] = []
  const paths = doc.paths ?? {}
  if (!isObject(paths)) fail('#/paths', 'expected an object')
  for (const [path, item] of Object.entries(paths)) {
    const itemPointer = child('#/paths', path)
    const k = Keywords.of(item, itemPointer)
    const shared = { list: k.get('parameters') ?? [], pointer: k.at('parameters') }
    for (const method of Object.keys(k.schema)) {
      if (!METHODS.includes(method)) continue
      const { operationId, source } = route(
        doc,
        path,
        method,
        k.get(method),
        child(itemPointer, method),
        shared,
      )
      if (operations.some((o) => o.operationId === operationId)) {
        fail(
          child(child(itemPointer, method), 'operationId'),
          `duplicate operationId ${literal(operationId)}`,
        )
      }
      operations.push({ operationId, method, path })
      parts.push(source)
    }
    k.done()
  }
  // Each entry carries its route so callers can walk every operation without naming them.
  const entries = operations.map(
    (o) =>
      `{ operationId: ${literal(o.operationId)}, method: ${literal(o.method)}, path: ${literal(o.path)}, route: ${o.operationId}Route }`,
  )
  parts.push(`export const operations = [${entries.join(', ')}] as const`)
  return `${parts.join('\n\n')}\n`
}

/** `export const XSchema = ….openapi('X')` for every components.schemas entry, dependencies first. */
function componentSchemas(doc: JsonObject): string[] {
  const components = doc.components ?? {}
  if (!isObject(components)) fail('#/components', 'expected an object')
  const schemas = components.schemas ?? {}
  if (!isObject(schemas)) fail('#/components/schemas', 'expected an object')

  const order: string[] = []
  const state = new Map<string, 'visiting' | 'done'>()
  const visit = (name: string, from: string) => {
    if (state.get(name) === 'done') return
    if (state.get(name) === 'visiting') fail(from, `cyclic $ref through ${name}`)
    if (!Object.hasOwn(schemas, name)) fail(from, `$ref to unknown schema ${literal(name)}`)
    state.set(name, 'visiting')
    const pointer = child('#/components/schemas', name)
    for (const ref of refsIn(schemas[name], pointer)) visit(schemaRefName(ref.ref, ref.pointer), ref.pointer)
    state.set(name, 'done')
    order.push(name)
  }
  for (const name of Object.keys(schemas)) visit(name, child('#/components/schemas', name))

  // Every schema $ref elsewhere in the document (paths, parameters, responses) must resolve too.
  for (const ref of refsIn(doc, '#')) {
    if (ref.ref.startsWith('#/components/schemas/')) visit(schemaRefName(ref.ref, ref.pointer), ref.pointer)
  }

  return order.map((name) => {
    const pointer = child('#/components/schemas', name)
    return `export const ${schemaConst(name)} = ${zodFor(schemas[name], pointer)}.openapi(${literal(name)})`
  })
}

/** Every `$ref` string below `value`, with the pointer of the object holding it. */
function refsIn(value: Json | undefined, pointer: string): { ref: string; pointer: string }[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => refsIn(v, child(pointer, i)))
  if (!isObject(value)) return []
  const own = typeof value.$ref === 'string' ? [{ ref: value.$ref, pointer: child(pointer, '$ref') }] : []
  return [...own, ...Object.entries(value).flatMap(([name, v]) => refsIn(v, child(pointer, name)))]
}

/**
 * Follows a `$ref` to `#/components/<kind>/<Name>`; description/summary beside it override the
 * target's (OpenAPI 3.1 reference object).
 */
export function resolve(doc: JsonObject, value: Json | undefined, pointer: string, kind: string) {
  if (!isObject(value) || !('$ref' in value)) return { value, pointer }
  const ref = value.$ref
  const prefix = `#/components/${kind}/`
  if (typeof ref !== 'string' || !ref.startsWith(prefix))
    fail(child(pointer, '$ref'), `expected a ${prefix} reference`)
  const name = ref.slice(prefix.length)
  const components = doc.components
  const target = isObject(components) && isObject(components[kind]) ? components[kind][name] : undefined
  if (!isObject(target)) fail(child(pointer, '$ref'), `unresolved reference ${literal(ref)}`)
  const { $ref: _, ...siblings } = value
  for (const name of Object.keys(siblings)) {
    if (name !== 'description' && name !== 'summary')
      fail(child(pointer, name), `unsupported keyword '${name}' beside $ref`)
  }
  return { value: { ...target, ...siblings } as JsonObject, pointer: child(`#/components/${kind}`, name) }
}

function route(
  doc: JsonObject,
  path: string,
  method: string,
  operation: Json | undefined,
  pointer: string,
  shared: { list: Json; pointer: string },
): { operationId: string; source: string } {
  const k = Keywords.of(operation, pointer)
  const operationId = k.string('operationId')
  if (operationId === undefined || !/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(operationId)) {
    fail(k.at('operationId'), 'every operation needs an operationId that is an identifier')
  }

  const config: string[] = [
    `method: ${literal(method)}`,
    `path: ${literal(path)}`,
    `operationId: ${literal(operationId)}`,
  ]
  for (const name of ['tags', 'summary', 'description', 'deprecated', 'security']) {
    const value = k.get(name)
    if (value !== undefined) config.push(`${name}: ${literal(value)}`)
  }

  const request = parameters(doc, shared, { list: k.get('parameters') ?? [], pointer: k.at('parameters') })
  if (k.has('requestBody'))
    request.push(`body: ${requestBody(doc, k.get('requestBody'), k.at('requestBody'))}`)
  if (request.length > 0) config.push(`request: {${request.join(', ')}}`)

  const responses = k.get('responses')
  if (!isObject(responses) || Object.keys(responses).length === 0) {
    fail(k.at('responses'), 'expected at least one response')
  }
  const entries = Object.entries(responses).map(([status, response]) => {
    const statusKey = /^[1-5][0-9][0-9]$/.test(status) ? status : literal(status)
    return `${statusKey}: ${responseConfig(doc, response, child(k.at('responses'), status))}`
  })
  config.push(`responses: {${entries.join(', ')}}`)
  k.done()
  return { operationId, source: `export const ${operationId}Route = createRoute({${config.join(', ')}})` }
}

/** `params: z.object(…)` and `query: z.object(…)`; header parameters are left to the handlers. */
function parameters(doc: JsonObject, ...lists: { list: Json; pointer: string }[]): string[] {
  const byKey = new Map<string, { parameter: JsonObject; pointer: string }>()
  for (const { list, pointer: listPointer } of lists) {
    if (!Array.isArray(list)) fail(listPointer, 'expected an array')
    list.forEach((entry, i) => {
      const { value, pointer } = resolve(doc, entry, child(listPointer, i), 'parameters')
      if (!isObject(value)) fail(pointer, 'expected a parameter object')
      byKey.set(`${value.in}:${value.name}`, { parameter: value, pointer }) // operation-level wins
    })
  }

  const shapes: Record<'path' | 'query', string[]> = { path: [], query: [] }
  for (const { parameter, pointer } of byKey.values()) {
    const k = new Keywords(parameter, pointer)
    const name = k.string('name')
    const location = k.string('in')
    const required = k.get('required') === true
    if (name === undefined) fail(k.at('name'), 'expected a name')
    if (location === 'header') continue // Hono lower-cases header names: handlers read headers themselves.
    if (location !== 'path' && location !== 'query')
      fail(k.at('in'), `unsupported parameter location ${literal(location)}`)
    if (location === 'path' && !required) fail(k.at('required'), 'a path parameter must be required')
    const schema = resolve(doc, k.get('schema'), k.at('schema'), 'schemas')
    if (schema.value === undefined) fail(k.at('schema'), 'expected a schema')
    const param: JsonObject = {}
    for (const field of ['description', 'example'] as const) {
      const value = k.schema[field]
      if (value !== undefined) param[field] = value
    }
    shapes[location].push(
      `${key(name)}: ${parameterZod(schema.value, schema.pointer, location, required, param)}`,
    )
    k.done()
  }
  const out: string[] = []
  if (shapes.path.length > 0) out.push(`params: z.object({${shapes.path.join(', ')}})`)
  if (shapes.query.length > 0) out.push(`query: z.object({${shapes.query.join(', ')}})`)
  return out
}

/**
 * A path or query parameter arrives as a string. Integers must consist of digits (an empty or
 * non-numeric string fails instead of becoming 0 as with z.coerce.number()) and are then checked
 * as numbers; the original schema is kept as OpenAPI metadata so the served document shows it.
 * A path ID is digits only (the HTTP layer answers INVALID_ID to any failure) and takes no other
 * keyword; a query integer may carry a sign so that out-of-range values get the number check's
 * message. `param` holds the parameter's own description/example, passed on as metadata.
 */
function parameterZod(
  schema: Json,
  pointer: string,
  location: 'path' | 'query',
  required: boolean,
  param: JsonObject,
): string {
  const paramMetadata = Object.keys(param).length > 0 ? { param } : {}
  const k = Keywords.of(schema, pointer)
  const type = k.schema.type
  if (type === 'integer') {
    k.get('type')
    // Digits are an integer, however many: a path ID past Number's exact range (or Infinity, for
    // hundreds of digits) is one no row has, 404 where it is looked up (`isStorableId`), not a
    // malformed one (INVALID_ID), so no number check follows.
    let expr =
      location === 'path'
        ? 'z.string().regex(/^[0-9]+$/).transform(Number)'
        : `z.string().regex(/^-?[0-9]+$/).transform(Number).pipe(${numeric(k, 'integer')})`
    if (k.has('default')) {
      const value = k.get('default')
      if (!Number.isInteger(value)) fail(k.at('default'), 'expected an integer')
      expr += `.default(${literal(value)})`
    } else if (!required) {
      expr += '.optional()'
    }
    k.done()
    return `${expr}.openapi(${literal({ ...k.schema, ...paramMetadata })})`
  }
  if (type === 'boolean') {
    k.get('type')
    let expr = "z.enum(['true', 'false']).transform((v) => v === 'true')"
    if (k.has('default')) expr += `.default(${literal(k.get('default'))})`
    else if (!required) expr += '.optional()'
    k.done()
    return `${expr}.openapi(${literal({ ...k.schema, ...paramMetadata })})`
  }
  if (type === 'array' && location === 'query') {
    // Hono hands a query parameter given once as a string and one repeated as an array.
    const list = zodFor(schema, pointer)
    k.get('type')
    k.get('items')
    k.get('maxItems')
    k.get('minItems')
    let expr = `z.union([z.string(), z.array(z.string())]).transform((v) => (typeof v === 'string' ? [v] : v)).pipe(${list})`
    if (!required) expr += '.optional()'
    k.done()
    return `${expr}.openapi(${literal({ ...k.schema, ...paramMetadata })})`
  }
  if (type !== 'string') fail(child(pointer, 'type'), `unsupported parameter type ${literal(type)}`)
  const expr = zodFor(schema, pointer, { optional: !required })
  return Object.keys(param).length > 0 ? `${expr}.openapi(${literal(paramMetadata)})` : expr
}

function requestBody(doc: JsonObject, body: Json | undefined, bodyPointer: string): string {
  const { value, pointer } = resolve(doc, body, bodyPointer, 'requestBodies')
  const k = Keywords.of(value, pointer)
  const parts = [`content: ${content(k.get('content'), k.at('content'), true)}`]
  const description = k.string('description')
  if (description !== undefined) parts.push(`description: ${literal(description)}`)
  parts.push(`required: ${k.get('required') === true}`)
  k.done()
  return `{${parts.join(', ')}}`
}

function responseConfig(doc: JsonObject, response: Json, responsePointer: string): string {
  const { value, pointer } = resolve(doc, response, responsePointer, 'responses')
  const k = Keywords.of(value, pointer)
  const parts = [`description: ${literal(k.string('description') ?? '')}`]
  if (k.has('headers')) parts.push(`headers: ${headers(doc, k.get('headers'), k.at('headers'))}`)
  if (k.has('content')) parts.push(`content: ${content(k.get('content'), k.at('content'), false)}`)
  k.done()
  return `{${parts.join(', ')}}`
}

/** `{ 'application/json': { schema: … } }`; request bodies must be JSON. */
function content(value: Json | undefined, pointer: string, jsonOnly: boolean): string {
  if (!isObject(value) || Object.keys(value).length === 0) fail(pointer, 'expected at least one media type')
  const entries = Object.entries(value).map(([mediaType, media]) => {
    const mediaPointer = child(pointer, mediaType)
    if (jsonOnly && mediaType !== 'application/json')
      fail(mediaPointer, 'only application/json request bodies')
    const k = Keywords.of(media, mediaPointer)
    const schema = k.has('schema') ? `schema: ${zodFor(k.get('schema'), k.at('schema'))}` : ''
    k.done()
    return `${literal(mediaType)}: {${schema}}`
  })
  return `{${entries.join(', ')}}`
}

/** Response headers are documentation only: they are passed through as OpenAPI header objects. */
function headers(doc: JsonObject, value: Json | undefined, pointer: string): string {
  if (!isObject(value)) fail(pointer, 'expected an object')
  const entries = Object.entries(value).map(([name, header]) => {
    const resolved = resolve(doc, header, child(pointer, name), 'headers')
    const k = Keywords.of(resolved.value, resolved.pointer)
    const object: JsonObject = {}
    for (const field of ['description', 'required', 'deprecated', 'schema', 'example']) {
      const v = k.get(field)
      if (v !== undefined) object[field] = v
    }
    k.done()
    return `${literal(name)}: ${literal(object)}`
  })
  return `{${entries.join(', ')}}`
}
