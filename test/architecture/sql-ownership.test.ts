import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

const SRC = path.resolve(import.meta.dirname, '../../src')

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true })
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => path.join(e.parentPath, e.name))
}

// A tagged template on a postgres.js handle, or its escape hatch.
const SQL = /(?<![`\w.])(?:sql|tx|db)\s*(?:<[^>]*>)?\s*`|\.unsafe\(/

describe('SQL ownership', () => {
  it('every statement lives in src/db, one module per table family', async () => {
    const offenders: string[] = []
    for (const file of await sourceFiles(SRC)) {
      const relative = path.relative(SRC, file)
      if (relative.startsWith(`db${path.sep}`) || relative.startsWith(`generated${path.sep}`)) continue
      const lines = (await readFile(file, 'utf8')).split('\n')
      lines.forEach((line, index) => {
        if (SQL.test(line)) offenders.push(`src/${relative}:${index + 1}: ${line.trim()}`)
      })
    }
    expect(offenders).toEqual([])
  })

  it('the check recognises a statement', () => {
    expect(SQL.test('const rows = await sql`select 1`')).toBe(true)
    expect(SQL.test('await tx<{ id: number }[]>`update outbox`')).toBe(true)
    expect(SQL.test('await db.unsafe(text)')).toBe(true)
    expect(SQL.test('const message = `sql is fine in prose`')).toBe(false)
    expect(SQL.test('/** the database `sql` talks to */')).toBe(false)
  })
})
