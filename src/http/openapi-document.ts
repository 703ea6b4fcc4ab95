import { readFileSync } from 'node:fs'
import path from 'node:path'
import { parse } from 'yaml'
import { PROJECT_ROOT } from '../project-root.ts'

const OPENAPI_SOURCE = path.join(PROJECT_ROOT, 'openapi', 'openapi.yaml')

/** The contract exactly as written in openapi/openapi.yaml: the app serves the source, not a copy. */
export function loadOpenApiDocument(): Record<string, unknown> {
  return parse(readFileSync(OPENAPI_SOURCE, 'utf8')) as Record<string, unknown>
}
