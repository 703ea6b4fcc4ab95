/**
 * Every API operation, fed bodies generated from the OpenAPI document's request
 * schemas and then mutated (wrong types, huge, deep and empty values, unicode edge cases, NUL,
 * unknown and duplicate keys), answers a success or a documented 4xx shape, never a 5xx, and
 * `/health` keeps answering throughout. At least 5,000 requests per run.
 */
import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import { operations } from '../../src/generated/routes.ts'
import { loadOpenApiDocument } from '../../src/http/openapi-document.ts'
import { useTestApp } from '../support/app.ts'
import { type Sender, startSender } from '../support/sending.ts'

type Schema = Record<string, unknown>
const doc = loadOpenApiDocument() as { paths: Record<string, Record<string, Schema>>; components: Schema }
const schemas = (doc.components as { schemas: Record<string, Schema> }).schemas

/** Requests per operation; with 15 operations, over 5,000 in all. */
const RUNS_PER_OPERATION = 350

const app = useTestApp()
let sender: Sender
const ids = { audience: 0, member: 0, template: 0, batch: 0 }
let requests = 0

beforeAll(async () => {
  sender = await startSender(app, 'fuzz', { plan: 'pro' })
  const json = async (path: string, body: unknown) =>
    (await app.request(path, { key: sender.key, body })).json()
  ids.audience = (await json('/audiences', { name: 'Fuzzed' })).audience.id
  await json(`/audiences/${ids.audience}/members`, { members: [{ email: 'm@example.com' }] })
  const page = await (await app.request(`/audiences/${ids.audience}/members`, { key: sender.key })).json()
  ids.member = page.members[0].id
  ids.template = (await json('/templates', { name: 'T', subject: 'S', text_body: 'B' })).template.id
  ids.batch = (
    await json('/send/batch', { template_id: ids.template, recipients: ['r@example.com'] })
  ).batch_id
})

function resolve(schema: Schema): Schema {
  const ref = schema.$ref
  return typeof ref === 'string' ? resolve(schemas[ref.split('/').pop() as string] as Schema) : schema
}

// --- values that conform to a schema (kept small: the mutations bring the size)
const address = fc
  .tuple(fc.stringMatching(/^[a-z0-9]{1,12}$/), fc.constantFrom('example.com', 'mail.example.org'))
  .map(([local, domain]) => `${local}@${domain}`)

function conforming(input: Schema): fc.Arbitrary<unknown> {
  const schema = resolve(input)
  if (Array.isArray(schema.oneOf)) return fc.oneof(...schema.oneOf.map((s) => conforming(s as Schema)))
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type
  switch (type) {
    case 'string':
      if (schema.format === 'email') return address
      if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum)
      return fc.string({ minLength: (schema.minLength as number) ?? 0, maxLength: 20 })
    case 'integer':
      return fc.integer({
        min: (schema.minimum as number) ?? 1,
        max: Math.min((schema.maximum as number) ?? 50, 50),
      })
    case 'boolean':
      return fc.boolean()
    case 'array':
      return fc.array(conforming(schema.items as Schema), {
        minLength: (schema.minItems as number) ?? 0,
        maxLength: 3,
      })
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, Schema>
      if (Object.keys(properties).length === 0)
        return fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 })
      const required = (schema.required ?? []) as string[]
      const record = fc.record(
        Object.fromEntries(Object.entries(properties).map(([name, s]) => [name, conforming(s)])),
        { requiredKeys: required },
      )
      const anyOf = schema.anyOf as { required: string[] }[] | undefined
      // The one refinement the document uses: at least one of the bodies.
      return anyOf
        ? record.map((value) =>
            'text_body' in value || 'html_body' in value ? value : { ...value, text_body: 'B' },
          )
        : record
    }
    default:
      return fc.jsonValue({ maxDepth: 2 })
  }
}

// --- hostile values
const nested = (levels: number, leaf: unknown): unknown => {
  let value = leaf
  for (let i = 0; i < levels; i++) value = i % 2 ? [value] : { k: value }
  return value
}
const oddText = fc.constantFrom(
  'x\ud800y',
  '\udc00',
  'a\u0000b',
  '\u0000',
  '',
  ' ',
  '\r\nBcc: x@example.com',
  '\u202egnp.exe',
  '\ufeff',
  '\u2028',
  '😀'.repeat(300),
  'é'.repeat(9000),
  '{{name}}',
  `${'a'.repeat(65)}@example.com`,
  `${'a'.repeat(20_000)}@example.com`,
  ','.repeat(5000),
)
const hostile: fc.Arbitrary<unknown> = fc.oneof(
  oddText,
  fc.constantFrom(null, true, 0, -1, 1.5, 2 ** 53, -(2 ** 63), 1e308, [], {}, [[]], { '': '' }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(30, 33, 63, 65, 200, 3000).map((levels) => nested(levels, 'leaf')),
  fc.constantFrom(999, 1001, 524_289, 600_000).map((n) => 'x'.repeat(n)),
  fc.constantFrom(11, 1001, 10_001).map((n) => Array(n).fill('bad')),
  fc.dictionary(oddText, oddText, { maxKeys: 3 }),
)

type Mutation = { body: unknown; raw?: string }

/** A body, then one of: as is, a field replaced or added, an unknown key, a duplicate key, or the whole body replaced. */
function mutated(schema: Schema): fc.Arbitrary<Mutation> {
  return fc
    .tuple(conforming(schema), fc.nat(), hostile, fc.nat(9), fc.string({ maxLength: 12 }))
    .map(([value, pick, bad, how, unknown]) => {
      const body = value as Record<string, unknown>
      const keys = Object.keys(body)
      const key = keys.length ? (keys[pick % keys.length] as string) : 'name'
      switch (how) {
        case 0:
          return { body }
        case 1:
        case 2:
        case 3:
          return { body: { ...body, [key]: bad } }
        case 4:
          return { body: { ...body, [unknown]: bad } }
        case 5: {
          // JSON text with the key twice: JSON.parse keeps the last one.
          const rest = JSON.stringify(body).slice(1)
          const raw = `{${JSON.stringify(key)}:${JSON.stringify(bad) ?? 'null'}${rest === '}' ? '' : ','}${rest}`
          return { body, raw }
        }
        case 6: {
          const inner = body[key]
          const deeper = inner && typeof inner === 'object' ? { ...inner, [unknown]: bad } : [bad]
          return { body: { ...body, [key]: deeper } }
        }
        case 7:
          return { body: bad }
        case 8: {
          const { [key]: _, ...without } = body
          return { body: without }
        }
        default:
          return { body: nested(70, body) }
      }
    })
}

const hostileId = fc.oneof(
  fc.constant('{real}'),
  fc.constantFrom(
    'abc',
    '-1',
    '0',
    '1.5',
    '99999999999999999999',
    '9'.repeat(400),
    '%00',
    '2147483648',
    '%F0%9F%98%80',
  ),
)
const query = fc.oneof(
  fc.constant(''),
  fc
    .tuple(
      fc.constantFrom('limit', 'offset', 'x'),
      fc.oneof(fc.integer().map(String), fc.constantFrom('', 'abc', '1e3', '%00', '1001')),
    )
    .map(([name, value]) => `?${name}=${value}`),
)

const SHAPES = {
  standard: (b: Record<string, unknown>) => typeof b.code === 'string' && typeof b.message === 'string',
  simple: (b: Record<string, unknown>) => typeof b.error === 'string',
  validation: (b: Record<string, unknown>) => {
    const error = b.error as { name?: unknown; issues?: unknown[] } | undefined
    return (
      b.success === false &&
      error?.name === 'ZodError' &&
      Array.isArray(error.issues) &&
      error.issues.length <= 100
    )
  },
}

function realPath(template: string, pathIds: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => pathIds[name] ?? '1')
}

async function healthy(): Promise<void> {
  const health = await app.requestRoot('/health')
  expect(health.status).toBe(200)
}

describe('every operation under generated and mutated bodies', () => {
  it.each(operations.map((o) => [o.operationId, o] as const))(
    '%s answers a success or a documented 4xx, never a 5xx',
    async (_, operation) => {
      const spec = doc.paths[operation.path]?.[operation.method] as Schema
      const documented = Object.keys(spec.responses as Schema).map(Number)
      const bodySchema = (spec.requestBody as { content?: Record<string, { schema: Schema }> } | undefined)
        ?.content?.['application/json']?.schema
      const bodies: fc.Arbitrary<Mutation | undefined> = bodySchema
        ? mutated(bodySchema)
        : fc.constant(undefined)
      const real = {
        id: String(
          operation.path.startsWith('/batches')
            ? ids.batch
            : operation.path.startsWith('/templates')
              ? ids.template
              : ids.audience,
        ),
        memberId: String(ids.member),
      }
      await fc.assert(
        fc.asyncProperty(bodies, hostileId, hostileId, query, async (mutation, id, memberId, search) => {
          const pathIds = {
            id: id === '{real}' ? real.id : id,
            memberId: memberId === '{real}' ? real.memberId : memberId,
          }
          const path = `${realPath(operation.path, pathIds)}${operation.method === 'get' ? search : ''}`
          const response = await app.request(path, {
            method: operation.method.toUpperCase(),
            key: sender.key,
            ...(mutation ? { body: mutation.raw ?? JSON.stringify(mutation.body) } : {}),
          })
          requests++
          const text = await response.text()
          expect(response.status, `${operation.method} ${path}: ${text.slice(0, 300)}`).toBeLessThan(500)
          if (response.status >= 400) {
            expect([...documented, 413]).toContain(response.status)
            const body = JSON.parse(text)
            expect(
              Object.values(SHAPES).some((shape) => shape(body)),
              text.slice(0, 300),
            ).toBe(true)
          }
          if (requests % 100 === 0) await healthy()
        }),
        { numRuns: RUNS_PER_OPERATION },
      )
      await healthy()
    },
  )

  it('sent at least 5,000 requests', () => {
    expect(requests).toBeGreaterThanOrEqual(5000)
  })
})
