/**
 * The README and every page under docs/ send a reader to source files, to each other and to
 * settings; each must be there. Every `src/...` path they name (a file, or a folder ending in
 * `/`) exists in the checkout, every relative link opens a file, and every setting the service
 * reads has its row in the README's configuration table.
 */
import { existsSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'
import { PROJECT_ROOT } from '../../src/project-root.ts'

/** `src/` followed by path characters; a trailing `.` or `,` ends the sentence, not the path. */
const SOURCE_PATH = /(?<![\w./-])src\/[\w./-]*[\w/]/g
/** A Markdown link or image whose target is not a URL or an anchor on the same page. */
const RELATIVE_LINK = /\]\((?!https?:|mailto:|#)([^)\s]+)\)/g

async function documents(): Promise<string[]> {
  const pages = (await readdir(path.join(PROJECT_ROOT, 'docs'))).filter((name) => name.endsWith('.md'))
  return ['README.md', ...pages.map((name) => path.join('docs', name))]
}

/** The source paths a text names, wildcards (`src/db/*`) cut at the folder they are in. */
function sourcePaths(text: string): string[] {
  return [...new Set([...text.matchAll(SOURCE_PATH)].map(([match]) => match))]
}

/** The files a document's relative links open, resolved from the document's folder. */
function linkedFiles(document: string, text: string): string[] {
  return [...text.matchAll(RELATIVE_LINK)].map(([, target = '']) =>
    path.join(path.dirname(document), target.replace(/#.*$/, '')),
  )
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

it('links only to files that exist', async () => {
  const broken: string[] = []
  for (const document of await documents()) {
    const text = await readFile(path.join(PROJECT_ROOT, document), 'utf8')
    for (const file of linkedFiles(document, text)) {
      if (!existsSync(path.join(PROJECT_ROOT, file))) broken.push(`${document}: ${file}`)
    }
  }
  expect(broken).toEqual([])
})

it("documents every setting the service reads in the README's configuration table", async () => {
  const config = await readFile(path.join(PROJECT_ROOT, 'src', 'config.ts'), 'utf8')
  const read = new Set(
    [...config.matchAll(/\benv\.([A-Z][A-Z0-9_]+)|\(\s*'([A-Z][A-Z0-9_]+)'/g)].map((m) => m[1] ?? m[2]),
  )
  const readme = await readFile(path.join(PROJECT_ROOT, 'README.md'), 'utf8')
  const table = readme.slice(
    readme.indexOf('## Configuration'),
    readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1),
  )
  const rows = new Set([...table.matchAll(/^\| `([A-Z][A-Z0-9_]+)` \|/gm)].map(([, name]) => name))
  expect(read.size).toBeGreaterThan(10)
  expect([...read].filter((name) => !rows.has(name as string))).toEqual([])
})

/** Where code and docs may cite a topic of docs/decisions.md by its heading. */
const CITING = ['src', 'test', 'bench', 'scripts', 'docs', 'openapi']

async function filesUnder(folder: string): Promise<string[]> {
  const entries = await readdir(path.join(PROJECT_ROOT, folder), { recursive: true, withFileTypes: true })
  return entries
    .filter((entry) => entry.isFile() && /\.(ts|tsx|sql|md|yaml)$/.test(entry.name))
    .map((entry) => path.join(entry.parentPath, entry.name))
}

/** The headings a text cites as `docs/decisions.md, "Heading"` (or several), across comment lines. */
function citedTopics(text: string): string[] {
  const joined = text.replace(/\n\s*(\*|\/\/|--|#)?\s*/g, ' ')
  const citations = joined.matchAll(/decisions\.md(?:, section)?[,:]?\s*\(?((?:"[^"]+"[;,]?\s*)+)/g)
  return [...citations].flatMap(([, titles = '']) =>
    [...titles.matchAll(/"([^"]+)"/g)].map(([, title]) => title as string),
  )
}

it('cites only topics docs/decisions.md has', async () => {
  const decisions = await readFile(path.join(PROJECT_ROOT, 'docs', 'decisions.md'), 'utf8')
  const headings = new Set([...decisions.matchAll(/^#+ (.+)$/gm)].map(([, heading]) => heading))
  const unknown: string[] = []
  for (const folder of CITING) {
    for (const file of await filesUnder(folder)) {
      // This file's own examples cite made-up topics.
      if (file === fileURLToPath(import.meta.url)) continue
      for (const topic of citedTopics(await readFile(file, 'utf8'))) {
        if (!headings.has(topic)) unknown.push(`${path.relative(PROJECT_ROOT, file)}: "${topic}"`)
      }
    }
  }
  expect(unknown).toEqual([])
})

it('finds the paths, links and topics a text names, without the punctuation that follows them', () => {
  expect(sourcePaths('see `src/db/queue.ts`, and src/http/. Then src/smtp/pool.ts.')).toEqual([
    'src/db/queue.ts',
    'src/http/',
    'src/smtp/pool.ts',
  ])
  expect(citedTopics(' * (docs/decisions.md, "Quota, daily\n * limit and pacing"; "Pauses")')).toEqual([
    'Quota, daily limit and pacing',
    'Pauses',
  ])
  expect(
    linkedFiles('docs/a.md', '[b](b.md#top), [c](../c.md), [w](https://x.example/), [h](#here)'),
  ).toEqual(['docs/b.md', 'c.md'])
})
