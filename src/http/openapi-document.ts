import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'

const OPENAPI_SOURCE = fileURLToPath(new URL('../../openapi/openapi.yaml', import.meta.url))

/** The contract exactly as written in openapi/openapi.yaml: the app serves the source, not a copy. */
export function loadOpenApiDocument(): Record<string, unknown> {
  return parse(readFileSync(OPENAPI_SOURCE, 'utf8')) as Record<string, unknown>
}
