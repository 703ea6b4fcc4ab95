/**
 * Reading JSON Schema objects for the generators: JSON pointers, literals, component names, and
 * the keywords of one schema, each of which must be consumed (see Keywords.done).
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
export type JsonObject = { [key: string]: Json }

/** Keywords without effect on validation; `description` and `example` also become OpenAPI metadata. */
export const ANNOTATIONS = new Set([
  'description',
  'title',
  'example',
  'examples',
  'deprecated',
  '$comment',
  'externalDocs',
  'summary',
])

const SCHEMA_REF = '#/components/schemas/'

export function fail(pointer: string, message: string): never {
  throw new Error(`${pointer}: ${message}`)
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Appends one reference token to a JSON pointer. */
export function child(pointer: string, token: string | number): string {
  return `${pointer}/${String(token).replaceAll('~', '~0').replaceAll('/', '~1')}`
}

/** A JavaScript literal for a JSON value (Biome formats it later). */
export function literal(value: unknown): string {
  return JSON.stringify(value)
}

/** A property key: bare when it is an identifier, quoted otherwise. */
export function key(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : literal(name)
}

/** `v.name` or `v["na-me"]`. */
export function access(object: string, name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? `${object}.${name}` : `${object}[${literal(name)}]`
}

export function schemaConst(name: string): string {
  if (!/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name))
    fail(child('#/components/schemas', name), 'name is not an identifier')
  return `${name}Schema`
}

/** The component name of a `#/components/schemas/X` reference. */
export function schemaRefName(ref: unknown, pointer: string): string {
  if (typeof ref !== 'string' || !ref.startsWith(SCHEMA_REF) || ref.slice(SCHEMA_REF.length).includes('/')) {
    fail(pointer, `unsupported $ref ${literal(ref)} (only ${SCHEMA_REF}<Name>)`)
  }
  return ref.slice(SCHEMA_REF.length)
}

/** Reads the keywords of one schema object and remembers which were consumed. */
export class Keywords {
  private readonly used = new Set<string>()

  constructor(
    readonly schema: JsonObject,
    readonly pointer: string,
  ) {}

  static of(schema: unknown, pointer: string): Keywords {
    if (!isObject(schema)) fail(pointer, 'expected a schema object')
    return new Keywords(schema, pointer)
  }

  has(name: string): boolean {
    return Object.hasOwn(this.schema, name)
  }

  at(name: string): string {
    return child(this.pointer, name)
  }

  get(name: string): Json | undefined {
    this.used.add(name)
    return this.schema[name]
  }

  number(name: string): number | undefined {
    const value = this.get(name)
    if (value !== undefined && typeof value !== 'number') fail(this.at(name), 'expected a number')
    return value
  }

  string(name: string): string | undefined {
    const value = this.get(name)
    if (value !== undefined && typeof value !== 'string') fail(this.at(name), 'expected a string')
    return value
  }

  strings(name: string): string[] | undefined {
    const value = this.get(name)
    if (value !== undefined && !(Array.isArray(value) && value.every((v) => typeof v === 'string'))) {
      fail(this.at(name), 'expected an array of strings')
    }
    return value
  }

  /** Throws on the first keyword nobody consumed (annotations and `x-` extensions excepted). */
  done(): void {
    for (const name of Object.keys(this.schema)) {
      if (!this.used.has(name) && !ANNOTATIONS.has(name) && !name.startsWith('x-')) {
        fail(this.at(name), `unsupported keyword '${name}'`)
      }
    }
  }
}
