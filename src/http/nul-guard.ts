import { createMiddleware } from 'hono/factory'
import { type ValidationIssue, validationError } from '../errors.ts'
import type { AppEnv } from './env.ts'

/**
 * PostgreSQL text cannot hold U+0000, which JSON can carry as `\u0000`. A string with one
 * would fail deep in a query as a 500; it is refused up front as invalid input instead.
 */
export const refuseNulCharacters = createMiddleware<AppEnv>(async (c, next) => {
  if (c.req.header('content-type')?.includes('json')) {
    // Unparseable bodies are left to the validator, which answers INVALID_JSON.
    const body: unknown = await c.req.json().catch(() => undefined)
    const issues: ValidationIssue[] = []
    findNul(body, [], issues)
    if (issues.length) throw validationError(issues)
  }
  await next()
})

function findNul(value: unknown, path: (string | number)[], issues: ValidationIssue[]): void {
  if (typeof value === 'string') {
    if (value.includes('\u0000')) {
      issues.push({
        path,
        message: 'Text must not contain the NUL character (\\u0000)',
        code: 'invalid_format',
      })
    }
  } else if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) findNul(item, [...path, index], issues)
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) findNul(item, [...path, key], issues)
  }
}
