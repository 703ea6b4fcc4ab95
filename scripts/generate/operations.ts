/**
 * The OpenAPI document → the SDK's operations (sdk/src/generated/operations.ts): one typed
 * method per operation, named and grouped by the operation's `x-sdk-method`
 * (`audiences.members.add` → `client.audiences.members.add(…)`), each calling the SDK's
 * hand-written core (`sdk/src/core.ts`).
 *
 * Signatures follow one rule: the path parameters in path order, then the request body if any,
 * then the query parameters (one optional object) if any, then an optional options object
 * (`signal`, `headers`, and each header parameter under its camel-cased name, e.g.
 * `idempotencyKey` for `Idempotency-Key`). Types index openapi-typescript's `operations`
 * (sdk/src/generated/schema.ts); the result is the JSON body of the one 2xx response.
 */

import { child, fail, isObject, type Json, type JsonObject, literal } from './json-schema.ts'
import { METHODS, resolve } from './routes.ts'

/** The methods the SDK core sends. */
const SDK_METHODS = ['get', 'post', 'put', 'patch', 'delete']
/** A header parameter of this name makes a call without a response safe to repeat (see core.ts). */
const IDEMPOTENCY_HEADER = 'idempotency-key'
const METHOD_NAME = /^[a-z][A-Za-z0-9]*(\.[a-z][A-Za-z0-9]*)*$/

interface Parameter {
  name: string
  description: string | undefined
}

interface Operation {
  /** `x-sdk-method` split on dots. */
  name: string[]
  operationId: string
  method: string
  path: string
  summary: string | undefined
  description: string | undefined
  /** In path order. */
  pathParams: Parameter[]
  query: boolean
  headers: Parameter[]
  body: 'required' | 'optional' | undefined
  successStatus: string
}

export function sdkOperationsSource(doc: JsonObject): string {
  const operations = readOperations(doc)
  const parts = [
    "import type { Call, RequestOptions } from '../core.js'\nimport type { operations } from './schema.js'",
  ]
  for (const op of operations) {
    if (op.query) {
      parts.push(`/** Query parameters of \`${op.method.toUpperCase()} ${op.path}\`. */
export type ${queryType(op)} = NonNullable<operations[${literal(op.operationId)}]['parameters']['query']>`)
    }
    if (op.headers.length > 0) parts.push(optionsInterface(op))
  }
  parts.push(`/** Every operation of the Mailroom API, grouped as in their \`x-sdk-method\`. */
export interface MailroomOperations ${signatures(tree(operations))}`)
  parts.push(`/** The operations, each sending its request through \`call\`. */
export function bindOperations(call: Call): MailroomOperations {
  return ${implementations(tree(operations))}
}`)
  return `${parts.join('\n\n')}\n`
}

function readOperations(doc: JsonObject): Operation[] {
  const paths = doc.paths
  if (!isObject(paths)) fail('#/paths', 'expected an object')
  const operations: Operation[] = []
  for (const [path, item] of Object.entries(paths)) {
    if (!isObject(item)) fail(child('#/paths', path), 'expected a path item')
    for (const [method, operation] of Object.entries(item)) {
      if (!METHODS.includes(method)) continue
      const pointer = child(child('#/paths', path), method)
      if (!SDK_METHODS.includes(method)) fail(pointer, `the SDK core does not send ${method.toUpperCase()}`)
      if (!isObject(operation)) fail(pointer, 'expected an operation')
      operations.push(readOperation(doc, path, method, item, operation, pointer))
    }
  }
  checkNames(operations)
  return operations
}

function readOperation(
  doc: JsonObject,
  path: string,
  method: string,
  item: JsonObject,
  operation: JsonObject,
  pointer: string,
): Operation {
  const sdkMethod = operation['x-sdk-method']
  if (typeof sdkMethod !== 'string' || !METHOD_NAME.test(sdkMethod)) {
    fail(
      child(pointer, 'x-sdk-method'),
      'every operation needs its SDK method name, e.g. audiences.members.add',
    )
  }
  const operationId = operation.operationId
  if (typeof operationId !== 'string') fail(child(pointer, 'operationId'), 'expected a string')

  const parameters = new Map<string, JsonObject>()
  for (const [list, at] of [
    [item.parameters, child(child('#/paths', path), 'parameters')],
    [operation.parameters, child(pointer, 'parameters')],
  ] as const) {
    if (list === undefined) continue
    if (!Array.isArray(list)) fail(at, 'expected an array')
    list.forEach((entry, i) => {
      const { value } = resolve(doc, entry, child(at, i), 'parameters')
      if (!isObject(value) || typeof value.name !== 'string' || typeof value.in !== 'string') {
        fail(child(at, i), 'expected a parameter with a name and a location')
      }
      parameters.set(`${value.in}:${value.name}`, value) // the operation's own wins
    })
  }
  const described = (p: JsonObject): Parameter => ({
    name: p.name as string,
    description: typeof p.description === 'string' ? p.description : undefined,
  })
  const byLocation = (location: string) => [...parameters.values()].filter((p) => p.in === location)
  for (const p of parameters.values()) {
    if (!['path', 'query', 'header'].includes(p.in as string)) {
      fail(pointer, `unsupported parameter location ${literal(p.in)}`)
    }
  }

  const inTemplate = [...path.matchAll(/\{([^{}]+)\}/g)].map((m) => m[1] as string)
  const declared = byLocation('path').map((p) => p.name as string)
  if ([...inTemplate].sort().join() !== [...declared].sort().join()) {
    fail(pointer, `path parameters ${literal(declared)} do not match the path's ${literal(inTemplate)}`)
  }

  return {
    name: sdkMethod.split('.'),
    operationId,
    method,
    path,
    summary: typeof operation.summary === 'string' ? operation.summary : undefined,
    description: typeof operation.description === 'string' ? operation.description : undefined,
    pathParams: inTemplate.map((name) => described(parameters.get(`path:${name}`) as JsonObject)),
    query: byLocation('query').length > 0,
    headers: byLocation('header').map(described),
    body: requestBody(doc, operation.requestBody, child(pointer, 'requestBody')),
    successStatus: successStatus(doc, operation.responses, child(pointer, 'responses')),
  }
}

function requestBody(doc: JsonObject, body: Json | undefined, pointer: string): Operation['body'] {
  if (body === undefined) return undefined
  const { value } = resolve(doc, body, pointer, 'requestBodies')
  if (!isObject(value) || !isObject(value.content) || !isObject(value.content['application/json'])) {
    fail(pointer, 'the SDK sends JSON request bodies only')
  }
  return value.required === true ? 'required' : 'optional'
}

/** The one 2xx response, which must have a JSON body. */
function successStatus(doc: JsonObject, responses: Json | undefined, pointer: string): string {
  if (!isObject(responses)) fail(pointer, 'expected an object')
  const success = Object.keys(responses).filter((status) => /^2\d\d$/.test(status))
  const [status] = success
  if (status === undefined || success.length > 1) fail(pointer, 'the SDK needs exactly one 2xx response')
  const { value } = resolve(doc, responses[status], child(pointer, status), 'responses')
  if (!isObject(value) || !isObject(value.content) || !isObject(value.content['application/json'])) {
    fail(child(pointer, status), 'the SDK expects a JSON success body')
  }
  return status
}

/** No two operations share a name, and no name is both a method and a group. */
function checkNames(operations: Operation[]): void {
  const methods = new Set<string>()
  for (const op of operations) {
    const name = op.name.join('.')
    if (methods.has(name)) fail(`#/paths (${op.operationId})`, `x-sdk-method ${name} is used twice`)
    methods.add(name)
  }
  for (const op of operations) {
    for (let i = 1; i < op.name.length; i++) {
      const group = op.name.slice(0, i).join('.')
      if (methods.has(group)) fail(`#/paths (${op.operationId})`, `${group} is both a method and a group`)
    }
  }
}

// ------------------------------------------------------------------------------------------------

type Tree = Map<string, Operation | Tree>

/** Methods and groups in the document's order, a group where its first operation is. */
function tree(operations: Operation[]): Tree {
  const root: Tree = new Map()
  for (const op of operations) {
    let node = root
    for (const group of op.name.slice(0, -1)) {
      const next = node.get(group) ?? new Map()
      node.set(group, next)
      node = next as Tree
    }
    node.set(op.name.at(-1) as string, op)
  }
  return root
}

/** The interface's members: methods, and groups as read-only nested objects. */
function signatures(node: Tree): string {
  const entries = [...node].map(([name, value]) =>
    value instanceof Map ? `readonly ${name}: ${signatures(value)}` : signature(name, value),
  )
  return `{\n${entries.join('\n')}\n}`
}

/** The object literal implementing them. */
function implementations(node: Tree): string {
  const entries = [...node].map(([name, value]) =>
    value instanceof Map ? `${name}: ${implementations(value)}` : implementation(name, value),
  )
  return `{\n${entries.join(',\n')}\n}`
}

function pascal(name: string): string {
  return name.charAt(0).toUpperCase() + name.slice(1)
}

function queryType(op: Operation): string {
  return `${pascal(op.operationId)}Query`
}

function optionsType(op: Operation): string {
  return op.headers.length > 0 ? `${pascal(op.operationId)}Options` : 'RequestOptions'
}

/** `Idempotency-Key` → `idempotencyKey`. */
function optionName(header: string): string {
  const [first = '', ...rest] = header.split(/[^A-Za-z0-9]+/).filter(Boolean)
  return first.toLowerCase() + rest.map((w) => pascal(w.toLowerCase())).join('')
}

function isIdempotencyHeader(header: Parameter): boolean {
  return header.name.toLowerCase() === IDEMPOTENCY_HEADER
}

function docComment(lines: string[]): string {
  const body = lines.flatMap((line) => line.split('\n')).map((line) => ` * ${line}`.trimEnd())
  return `/**\n${body.join('\n').replaceAll('*/', '*\\/')}\n */`
}

function optionsInterface(op: Operation): string {
  const fields = op.headers.map((header) => {
    const lines = [`The \`${header.name}\` header.`]
    if (header.description) lines.push('', header.description.trim())
    if (isIdempotencyHeader(header)) {
      lines.push(
        '',
        'With `retries` above 0 the SDK makes a key for the call when none is given, and sends the',
        'same key on every attempt of that call.',
      )
    }
    const type = `NonNullable<operations[${literal(op.operationId)}]['parameters']['header']>[${literal(header.name)}]`
    return `${docComment(lines)}\n${optionName(header.name)}?: ${type}`
  })
  return `/** Options of \`${op.method.toUpperCase()} ${op.path}\`. */
export interface ${optionsType(op)} extends RequestOptions {
${fields.join('\n')}
}`
}

function parameterList(op: Operation): string[] {
  const id = literal(op.operationId)
  const list = op.pathParams.map(
    (p) => `${p.name}: operations[${id}]['parameters']['path'][${literal(p.name)}]`,
  )
  if (op.body) {
    list.push(
      op.body === 'required'
        ? `body: operations[${id}]['requestBody']['content']['application/json']`
        : `body?: NonNullable<operations[${id}]['requestBody']>['content']['application/json']`,
    )
  }
  if (op.query) list.push(`query?: ${queryType(op)}`)
  list.push(`options?: ${optionsType(op)}`)
  return list
}

function signature(name: string, op: Operation): string {
  const lines = [`\`${op.method.toUpperCase()} ${op.path}\`: ${op.summary ?? op.operationId}.`]
  // The first paragraph says what the operation does; the rest is the server's fine print.
  const firstParagraph = op.description?.trim().split(/\n\s*\n/)[0]
  if (firstParagraph) lines.push('', firstParagraph)
  if (op.pathParams.length > 0) lines.push('')
  for (const p of op.pathParams) lines.push(`@param ${p.name} ${p.description ?? ''}`.trimEnd())
  const result = `operations[${literal(op.operationId)}]['responses'][${op.successStatus}]['content']['application/json']`
  return `${docComment(lines)}\n${name}(${parameterList(op).join(', ')}): Promise<${result}>`
}

function implementation(name: string, op: Operation): string {
  const args = [...op.pathParams.map((p) => p.name)]
  const init: string[] = []
  if (op.pathParams.length > 0) init.push(`path: { ${op.pathParams.map((p) => p.name).join(', ')} }`)
  if (op.body) {
    args.push('body')
    init.push('body')
  }
  if (op.query) {
    args.push('query')
    init.push('query')
  }
  args.push('options')
  if (op.headers.length > 0) {
    const headers = op.headers.map((h) => `${literal(h.name)}: options?.${optionName(h.name)}`)
    init.push(`header: { ${headers.join(', ')} }`)
  }
  init.push('options')
  const idempotency = op.headers.find(isIdempotencyHeader)
  if (idempotency) init.push(`idempotencyHeader: ${literal(idempotency.name)}`)
  return `${name}: (${args.join(', ')}) => call(${literal(op.method.toUpperCase())}, ${literal(op.path)}, { ${init.join(', ')} })`
}
