/**
 * The README and every page under docs/ name source files by path; a path that no longer exists
 * sends a reader to nothing. Each `src/...` path they name (a file, or a folder ending in `/`)
 * must exist in the checkout.
 */
import { existsSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import { expect, it } from 'vitest'
import { PROJECT_ROOT } from '../../src/project-root.ts'

/** `src/` followed by path characters; a trailing `.` or `,` ends the sentence, not the path. */
const SOURCE_PATH = /(?<![\w./-])src\/[\w./-]*[\w/]/g

async function documents(): Promise<string[]> {
  const pages = (await readdir(path.join(PROJECT_ROOT, 'docs'))).filter((name) => name.endsWith('.md'))
  return ['README.md', ...pages.map((name) => path.join('docs', name))]
}

/** The paths a document names, wildcards (`src/db/*`) cut at the folder they are in. */
function sourcePaths(text: string): string[] {
  return [...new Set([...text.matchAll(SOURCE_PATH)].map(([match]) => match))]
}

it('names only source paths that exist', async () => {
  const missing: string[] = []
  for (const document of await documents()) {
    const text = await readFile(path.join(PROJECT_ROOT, document), 'utf8')
    for (const named of sourcePaths(text)) {
      if (!existsSync(path.join(PROJECT_ROOT, named))) missing.push(`${document}: ${named}`)
    }
  }
  expect(missing).toEqual([])
})

it('finds the paths a sentence names, without the punctuation that follows them', () => {
  expect(sourcePaths('see `src/db/queue.ts`, and src/http/. Then src/smtp/pool.ts.')).toEqual([
    'src/db/queue.ts',
    'src/http/',
    'src/smtp/pool.ts',
  ])
})
