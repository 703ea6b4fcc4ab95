/**
 * The OpenAPI document → the SDK's types (sdk/src/generated/schema.ts) with openapi-typescript.
 *
 * Two adaptations, on a copy of the document. openapi-typescript renders an object with a sibling
 * `anyOf: [{type: object, required: [a]}, …]` as `{…} | unknown | unknown`, which is `unknown`:
 * each such anyOf is moved into `allOf: [{anyOf: [{type: object, required: [a], properties: {a}}, …]}]`,
 * which it renders as `{…} & ({a: A} | {b: B})`, the same constraint expressed as a type. And it
 * reads a `type` beside oneOf as a constraint of its own (`unknown[] & (string | string[])`): that
 * type only names the alternatives (see zod.ts), so it is dropped.
 */
import openapiTS, { astToString, type OpenAPI3, type SchemaObject } from 'openapi-typescript'
import ts from 'typescript'
import { isObject, type Json, type JsonObject } from './json-schema.ts'
import { isRequiredOnly } from './zod.ts'

export async function sdkTypesSource(doc: JsonObject): Promise<string> {
  const adapted = adapt(structuredClone(doc)) as unknown as OpenAPI3
  return astToString(await openapiTS(adapted, { silent: true, transform: bytesOrText }))
}

/**
 * A string marked `x-sdk-bytes` (base64 on the wire) is typed `string | Uint8Array`: the SDK
 * takes bytes too, and encodes them itself (sdk/src/attachments.ts).
 */
function bytesOrText(schema: SchemaObject): ts.TypeNode | undefined {
  if (!('x-sdk-bytes' in schema) || schema['x-sdk-bytes'] !== true) return undefined
  return ts.factory.createUnionTypeNode([
    ts.factory.createKeywordTypeNode(ts.SyntaxKind.StringKeyword),
    ts.factory.createTypeReferenceNode('Uint8Array'),
  ])
}

function adapt(value: Json): Json {
  if (Array.isArray(value)) return value.map(adapt)
  if (!isObject(value)) return value
  const out: JsonObject = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, adapt(v)]))
  if (Array.isArray(out.oneOf)) delete out.type
  const { anyOf, properties } = out
  if (Array.isArray(anyOf) && isObject(properties) && !('allOf' in out) && anyOf.every(isRequiredOnly)) {
    delete out.anyOf
    out.allOf = [
      {
        anyOf: anyOf.map((alternative) => {
          const names = (alternative as { required: string[] }).required
          return {
            type: 'object',
            required: names,
            properties: Object.fromEntries(names.map((n) => [n, properties[n] ?? {}])),
          }
        }),
      },
    ]
  }
  return out
}
