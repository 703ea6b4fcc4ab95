import { readFile } from 'node:fs/promises'
import { beforeAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { createApp } from '../src/http/app.ts'
import { useTestApp } from './support/app.ts'

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']

type PathItem = Record<string, { responses?: Record<string, unknown> }>
interface Document {
  openapi: string
  info: { version: string }
  servers: { url: string; variables?: Record<string, { default: string }> }[]
  security: Record<string, string[]>[]
  components: { securitySchemes: Record<string, Record<string, unknown>> }
  paths: Record<string, PathItem>
}

const app = useTestApp()
let source: Document

beforeAll(async () => {
  source = parse(await readFile(new URL('../openapi/openapi.yaml', import.meta.url), 'utf8')) as Document
})

/** `METHOD /path` → sorted response status codes, for every operation of a document. */
function operationsOf(paths: Record<string, PathItem>, prefix = ''): Map<string, string[]> {
  const result = new Map<string, string[]>()
  for (const [path, item] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!METHODS.includes(method)) continue
      result.set(
        `${method.toUpperCase()} ${prefix}${path}`,
        Object.keys(operation.responses ?? {})
          .map(String)
          .sort(),
      )
    }
  }
  return result
}

/** The document the app registers from its routes, as operations with their status codes. */
function operationsOfApp(): Map<string, string[]> {
  const registered = createApp(app.services).getOpenAPI31Document({
    openapi: '3.1.0',
    info: { title: 'x', version: '1' },
  })
  return operationsOf(registered.paths as Record<string, PathItem>)
}

async function servedDocument(): Promise<Document> {
  return (await (await app.request('/openapi.json')).json()) as Document
}

describe('GET /v1/openapi.json', () => {
  it('needs no authentication and answers the contract as JSON, with its 34 operations', async () => {
    const response = await app.request('/openapi.json')
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^application\/json/)
    const document = (await response.json()) as Document
    expect(operationsOf(document.paths).size).toBe(34)
  })

  it('carries an ETag, and answers 304 with no body to a client whose copy is current', async () => {
    const first = await app.request('/openapi.json')
    const etag = first.headers.get('etag')
    expect(etag).toMatch(/^"[\w-]{16}"$/)
    expect(first.headers.get('cache-control')).toBe('no-cache')
    expect(await first.json()).toEqual(source)

    const current = await app.request('/openapi.json', { headers: { 'If-None-Match': etag as string } })
    expect(current.status).toBe(304)
    expect(current.headers.get('etag')).toBe(etag)
    expect(await current.text()).toBe('')

    const stale = await app.request('/openapi.json', { headers: { 'If-None-Match': '"an-older-copy000"' } })
    expect(stale.status).toBe(200)
    expect(await stale.json()).toEqual(source)
  })

  it('describes version 1.3.0 in OpenAPI 3.1', async () => {
    const document = await servedDocument()
    expect(document.info.version).toBe('1.3.0')
    expect(document.openapi.startsWith('3.1')).toBe(true)
  })

  it('has the server {base_url} whose default already ends in /v1', async () => {
    const document = await servedDocument()
    const [server] = document.servers
    expect(server?.url).toBe('{base_url}')
    expect(server?.variables?.base_url?.default).toMatch(/\/v1$/)
  })

  it('requires a bearer token globally', async () => {
    const document = await servedDocument()
    expect(document.security).toEqual([{ bearerAuth: [] }])
    expect(document.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' })
  })
})

describe('routes registered by the app', () => {
  it('are exactly the operations of the source, under /v1', () => {
    const fromApp = operationsOfApp()
    const fromSource = operationsOf(source.paths, '/v1')
    expect(fromSource.size).toBe(34)
    expect([...fromApp.keys()].sort()).toEqual([...fromSource.keys()].sort())
  })

  it('declare, for every operation, the same response status codes as the source', () => {
    const fromApp = operationsOfApp()
    const fromSource = operationsOf(source.paths, '/v1')
    for (const [operation, statuses] of fromSource) {
      expect(fromApp.get(operation), operation).toEqual(statuses)
    }
  })
})

describe('service pages', () => {
  it('GET /health answers 200 {status: "ok"}', async () => {
    const response = await app.requestRoot('/health')
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ status: 'ok' })
  })

  it('GET /reference answers 200 HTML that loads /v1/openapi.json', async () => {
    const response = await app.requestRoot('/reference')
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^text\/html/)
    expect(await response.text()).toContain('/v1/openapi.json')
  })
})

/** Every value in `node` with its JSON pointer, depth first. */
function* walk(node: unknown, pointer = '#'): Generator<[string, unknown]> {
  yield [pointer, node]
  if (typeof node !== 'object' || node === null) return
  for (const [key, value] of Object.entries(node)) yield* walk(value, `${pointer}/${key}`)
}

/** Where a schema object sits below another schema (under a component's or an operation's). */
const NESTED_SCHEMA = /\/(properties\/[^/]+|items|additionalProperties|(oneOf|anyOf|allOf)\/\d+)$/

describe('the source, as linters and the reference read it', () => {
  it('names every webhook with an operationId, unique across the document', () => {
    const doc = source as unknown as { webhooks: Record<string, PathItem> }
    const ids = [...walk(source)].filter(([p]) => p.endsWith('/operationId')).map(([, id]) => id)
    expect(new Set(ids).size).toBe(ids.length)
    for (const [name, item] of Object.entries(doc.webhooks)) {
      for (const [method, operation] of Object.entries(item)) {
        if (METHODS.includes(method))
          expect((operation as { operationId?: string }).operationId, name).toBeTruthy()
      }
    }
  })

  it('uses every component it declares', () => {
    const text = JSON.stringify(source)
    const components = source.components as unknown as Record<string, Record<string, unknown>>
    const unused = Object.entries(components).flatMap(([kind, entries]) =>
      kind === 'securitySchemes'
        ? []
        : Object.keys(entries).filter((name) => !text.includes(`"#/components/${kind}/${name}"`)),
    )
    expect(unused).toEqual([])
  })

  it('gives every schema below another a type, or a $ref (the reference refuses one without)', () => {
    const untyped = [...walk(source)]
      .filter(([pointer, node]) => NESTED_SCHEMA.test(pointer) && typeof node === 'object' && node !== null)
      .filter(([, node]) => !('type' in (node as object)) && !('$ref' in (node as object)))
      .map(([pointer]) => pointer)
    expect(untyped).toEqual([])
  })
})
