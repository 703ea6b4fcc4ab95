/**
 * The README's method and code tables are written by hand; these tests fail when an operation
 * or a catalog code is added without them.
 */
import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { API_ERROR_CODES, API_ERRORS, createClient } from '../src/index.js'

const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8')

/** `send`, `audiences.members.add`, …: every method of a client, found by walking it. */
function methodNames(node: object, prefix = ''): string[] {
  return Object.entries(node).flatMap(([name, value]) => {
    if (typeof value === 'function') return [`${prefix}${name}`]
    if (typeof value === 'object' && value !== null) return methodNames(value, `${prefix}${name}.`)
    return []
  })
}

describe('README.md', () => {
  it('lists every method in its table', () => {
    const {
      raw: _raw,
      baseUrl: _baseUrl,
      ...operations
    } = createClient({
      baseUrl: 'http://127.0.0.1:3000/v1',
      apiKey: 'mr_key',
    })
    const methods = methodNames(operations)
    expect(methods).toHaveLength(34)
    for (const method of methods) expect(readme, method).toContain(`| \`mailroom.${method}(`)
  })

  it('explains the type of err.code as errors.ts declares it, open to codes added later', async () => {
    const source = await readFile(new URL('../src/errors.ts', import.meta.url), 'utf8')
    const declared = /class MailroomError [\s\S]*?readonly code: ([^\n]+)/.exec(source)?.[1]
    expect(declared).toBe('MailroomErrorCode | (string & {})')
    expect(readme).toContain(`\`err.code\` is typed \`${declared}\``)
    expect(readme).toContain('`(string & {})` is any string')
  })

  it('lists every code of the catalog with its status', () => {
    for (const code of API_ERROR_CODES) {
      expect(readme, code).toContain(`| ${API_ERRORS[code].status} | \`${code}\` |`)
    }
  })
})
