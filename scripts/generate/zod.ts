/**
 * JSON Schema (the subset openapi/openapi.yaml uses) → zod 4 source text.
 *
 * Every keyword of a schema must be understood: anything outside the subset throws with the
 * schema's JSON pointer, so a new construct in the document cannot be silently accepted.
 */

import {
  ANNOTATIONS,
  access,
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

/** `.openapi({ description, example })` for an inline schema, or '' when it has neither. */
function metadata(k: Keywords): string {
  const meta: JsonObject = {}
  for (const name of ['description', 'example'] as const) {
    const value = k.schema[name]
    if (value !== undefined) meta[name] = value
  }
  return Object.keys(meta).length > 0 ? `.openapi(${literal(meta)})` : ''
}

export type ZodOptions = {
  /** Append `.optional()` (an object property not listed in `required`) unless a default applies. */
  optional?: boolean
}

/**
 * The zod expression validating `schema`, found at `pointer`.
 * Wrapping order: base checks → `.nullable()` → `.default()` / `.optional()` → `.openapi()` metadata.
 */
export function zodFor(schema: unknown, pointer: string, options: ZodOptions = {}): string {
  const k = Keywords.of(schema, pointer)
  if (k.has('$ref')) {
    // Siblings of $ref may only be annotations (OpenAPI 3.1 allows description/summary there).
    const expr = schemaConst(schemaRefName(k.get('$ref'), k.at('$ref')))
    k.done()
    return options.optional ? `${expr}.optional()` : expr
  }
  let expr = base(k)
  if (k.has('default')) expr += `.default(${literal(k.get('default'))})`
  else if (options.optional) expr += '.optional()'
  expr += metadata(k)
  k.done()
  return expr
}

/** The expression for everything but default/optional/metadata. */
function base(k: Keywords): string {
  if (k.has('allOf')) fail(k.at('allOf'), 'allOf is not supported')
  if (k.has('not')) fail(k.at('not'), 'not is not supported')

  const anyOf = k.schema.anyOf
  const requiredAlternatives = Array.isArray(anyOf) && anyOf.every(isRequiredOnly)
  for (const combinator of ['oneOf', ...(requiredAlternatives ? [] : ['anyOf'])]) {
    if (k.has(combinator)) {
      if (k.has('properties')) fail(k.at(combinator), `${combinator} beside properties`)
      if (k.has('type')) typesOfAlternatives(k, combinator)
      return union(k, combinator)
    }
  }

  const { type, nullable } = typeOf(k)
  // const and enum list every accepted value, null included: they alone decide nullability.
  if (k.has('const')) return `z.literal(${literal(k.get('const'))})`
  if (k.has('enum')) return enumeration(k)
  let expr: string
  switch (type) {
    case 'string':
      expr = string(k)
      break
    case 'integer':
    case 'number':
      expr = numeric(k, type)
      break
    case 'boolean':
      expr = 'z.boolean()'
      break
    case 'null':
      expr = 'z.null()'
      break
    case 'array':
      expr = array(k)
      break
    case 'object':
      expr = object(k)
      break
    case undefined: {
      const validating = Object.keys(k.schema).filter((n) => !ANNOTATIONS.has(n) && !n.startsWith('x-'))
      if (validating.length > 0) fail(k.pointer, `schema without type (keywords: ${validating.join(', ')})`)
      expr = 'z.unknown()'
      break
    }
    default:
      fail(k.at('type'), `unsupported type ${literal(type)}`)
  }
  return nullable ? `${expr}.nullable()` : expr
}

/** `type: X` or `type: [X, 'null']`. */
function typeOf(k: Keywords): { type: string | undefined; nullable: boolean } {
  const type = k.get('type')
  if (type === undefined || typeof type === 'string') return { type, nullable: false }
  if (Array.isArray(type) && type.length === 2 && type.includes('null')) {
    const other = type.find((t) => t !== 'null')
    if (typeof other === 'string') return { type: other, nullable: true }
  }
  return fail(k.at('type'), `unsupported type ${literal(type)} (only X or [X, "null"])`)
}

/** `{required: [...]}`, typed `object` or not: one alternative of the at-least-one refinement. */
export function isRequiredOnly(alternative: Json): boolean {
  if (!isObject(alternative) || !Array.isArray(alternative.required)) return false
  return Object.keys(alternative).every(
    (n) => n === 'required' || (n === 'type' && alternative.type === 'object'),
  )
}

/**
 * A `type` beside oneOf only says what the alternatives are (for tools that want a type on every
 * schema): it must list each inline alternative's type, and validation comes from the alternatives.
 */
function typesOfAlternatives(k: Keywords, combinator: string): void {
  const listed = [k.get('type')].flat()
  for (const [i, alternative] of (k.schema[combinator] as Json[]).entries()) {
    const type = isObject(alternative) ? alternative.type : undefined
    if (typeof type === 'string' && !listed.includes(type))
      fail(child(k.at(combinator), i), `type ${literal(type)} is not in the type beside ${combinator}`)
  }
}

function union(k: Keywords, combinator: string): string {
  const alternatives = k.get(combinator)
  if (!Array.isArray(alternatives) || alternatives.length === 0)
    fail(k.at(combinator), 'expected a non-empty array')
  const pointer = k.at(combinator)
  const members = alternatives.map((a, i) => zodFor(a, child(pointer, i)))
  const nonNull = members.filter((m) => m !== 'z.null()')
  if (members.length === 2 && nonNull.length === 1) return `${nonNull[0]}.nullable()`
  if (members.length === 1) return members[0] as string
  // unionMessage is emitted once at the top of the generated file (see routes.ts).
  const expected = `Expected ${alternatives.map(kindOf).join(' or ')}`
  return `z.union([${members.join(', ')}], { error: unionMessage(${literal(expected)}) })`
}

/** How an alternative reads in a message: "a string", "an array", or a component's name. */
function kindOf(alternative: Json): string {
  if (!isObject(alternative)) return 'a value'
  if (typeof alternative.$ref === 'string')
    return alternative.$ref.slice(alternative.$ref.lastIndexOf('/') + 1)
  const type = alternative.type
  if (type === 'array') return 'an array'
  if (type === 'object') return 'an object'
  if (type === 'integer') return 'an integer'
  return typeof type === 'string' ? `a ${type}` : 'a value'
}

function enumeration(k: Keywords): string {
  const values = k.get('enum')
  if (!Array.isArray(values) || values.length === 0) fail(k.at('enum'), 'expected a non-empty array')
  const nonNull = values.filter((v) => v !== null)
  const expr = nonNull.every((v) => typeof v === 'string')
    ? `z.enum(${literal(nonNull)})`
    : nonNull.length === 1
      ? `z.literal(${literal(nonNull[0])})`
      : `z.union([${nonNull.map((v) => `z.literal(${literal(v)})`).join(', ')}])`
  return values.includes(null) ? `${expr}.nullable()` : expr
}

/** RFC 5321's atext: what an unquoted local part is made of, besides the dots between runs. */
const ATEXT = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"

/**
 * The pattern behind `format: email`, declared once in the generated source: RFC 5321's Mailbox
 * with a Dot-string local part (zod's own pattern refuses `=`, `/`, `!` and the like, and `=` is
 * in every VERP and SRS bounce address) at a domain of dotted DNS labels ending in letters, as
 * zod's. Quoted local parts and address literals stay out.
 */
export const MAILBOX_SOURCE = `/** RFC 5321's Mailbox: a Dot-string local part at a domain of dotted DNS labels. */
const MAILBOX = /^${ATEXT}+(?:\\.${ATEXT}+)*@(?:[A-Za-z0-9][A-Za-z0-9-]*\\.)+[A-Za-z]{2,}$/`

const STRING_FORMATS: Record<string, string> = {
  email: 'z.email({ pattern: MAILBOX })',
  // RFC 3339 date-time (what JSON Schema means) allows a numeric offset as well as Z.
  'date-time': 'z.iso.datetime({ offset: true })',
}

function string(k: Keywords): string {
  const format = k.string('format')
  let expr = format === undefined ? 'z.string()' : STRING_FORMATS[format]
  if (expr === undefined) fail(k.at('format'), `unsupported string format ${literal(format)}`)
  const min = k.number('minLength')
  const max = k.number('maxLength')
  const pattern = k.string('pattern')
  if (min !== undefined) expr += `.min(${min})`
  if (max !== undefined) expr += `.max(${max})`
  if (pattern !== undefined) {
    try {
      new RegExp(pattern)
    } catch {
      fail(k.at('pattern'), `invalid regular expression ${literal(pattern)}`)
    }
    expr += `.regex(new RegExp(${literal(pattern)}))`
  }
  return expr
}

const NUMBER_FORMATS: Record<string, Record<string, string>> = {
  integer: { int32: 'z.int32()', int64: 'z.int()' },
  number: { float: 'z.number()', double: 'z.number()' },
}

/** The bounds of an integer or number schema as zod checks (`.min(1).max(1000)`). */
function numericChecks(k: Keywords): string {
  let checks = ''
  const bounds = [
    ['minimum', 'min'],
    ['maximum', 'max'],
    ['exclusiveMinimum', 'gt'],
    ['exclusiveMaximum', 'lt'],
    ['multipleOf', 'multipleOf'],
  ] as const
  for (const [keyword, method] of bounds) {
    const value = k.number(keyword)
    if (value !== undefined) checks += `.${method}(${value})`
  }
  return checks
}

export function numeric(k: Keywords, type: 'integer' | 'number'): string {
  const format = k.string('format')
  const expr =
    format === undefined ? (type === 'integer' ? 'z.int()' : 'z.number()') : NUMBER_FORMATS[type]?.[format]
  if (expr === undefined) fail(k.at('format'), `unsupported ${type} format ${literal(format)}`)
  return expr + numericChecks(k)
}

function array(k: Keywords): string {
  const items = k.has('items') ? zodFor(k.get('items'), k.at('items')) : 'z.unknown()'
  let expr = `z.array(${items})`
  const min = k.number('minItems')
  const max = k.number('maxItems')
  if (min !== undefined) expr += `.min(${min})`
  if (max !== undefined) expr += `.max(${max})`
  return expr
}

function object(k: Keywords): string {
  const properties = k.get('properties') ?? {}
  if (!isObject(properties)) fail(k.at('properties'), 'expected an object')
  const required = k.strings('required') ?? []
  for (const name of required) {
    if (!Object.hasOwn(properties, name))
      fail(k.at('required'), `required property '${name}' is not in properties`)
  }
  const additional = k.get('additionalProperties')
  const names = Object.keys(properties)

  let expr: string
  if (names.length === 0 && additional !== false) {
    // A free-form map: JSON Schema accepts any keys, so do not strip them.
    const values =
      additional === undefined || additional === true
        ? 'z.unknown()'
        : zodFor(additional, k.at('additionalProperties'))
    expr = `z.record(z.string(), ${values})`
  } else {
    const shape = names
      .map((name) => {
        const pointer = child(k.at('properties'), name)
        return `${key(name)}: ${zodFor(properties[name], pointer, { optional: !required.includes(name) })}`
      })
      .join(', ')
    if (additional === false) expr = `z.strictObject({${shape}})`
    else if (additional === true) expr = `z.looseObject({${shape}})`
    else if (additional === undefined) expr = `z.object({${shape}})`
    else expr = `z.object({${shape}}).catchall(${zodFor(additional, k.at('additionalProperties'))})`
  }

  if (k.has('anyOf')) expr += atLeastOne(k, properties)
  return expr + jsonBounds(k)
}

/**
 * `x-max-json-bytes` and `x-max-depth` (JSON Schema cannot bound a free-form value's size or
 * nesting) → a refinement by `jsonBounds`, emitted once at the top of the generated file.
 */
function jsonBounds(k: Keywords): string {
  const bytes = k.number('x-max-json-bytes')
  const depth = k.number('x-max-depth')
  if (bytes === undefined && depth === undefined) return ''
  if (bytes === undefined || depth === undefined)
    fail(k.pointer, 'x-max-json-bytes and x-max-depth go together')
  return `.superRefine(jsonBounds(${bytes}, ${depth}))`
}

/** `anyOf: [{required: [a]}, {required: [b]}]` beside an object's properties → a refinement. */
function atLeastOne(k: Keywords, properties: JsonObject): string {
  const alternatives = (k.get('anyOf') as Json[]).map((alternative, i) => {
    const names = (alternative as { required: Json[] }).required
    if (names.length === 0 || !names.every((n) => typeof n === 'string' && Object.hasOwn(properties, n))) {
      fail(child(child(k.at('anyOf'), i), 'required'), 'expected names of declared properties')
    }
    return names as string[]
  })
  const missing = alternatives
    .map((names) => {
      const absent = names.map((n) => `${access('v', n)} === undefined`)
      return names.length === 1 ? absent[0] : `(${absent.join(' || ')})`
    })
    .join(' && ')
  const labels = alternatives.map((names) => names.join(' and '))
  const list = labels.length === 1 ? labels[0] : `${labels.slice(0, -1).join(', ')} or ${labels.at(-1)}`
  const message = `At least one of ${list} is required`
  return `.superRefine((v, ctx) => { if (${missing}) ctx.addIssue({ code: 'custom', path: [], message: ${literal(message)} }) })`
}
