/**
 * A newcomer reads a module in one sitting and a function on one screen: no hand-written
 * TypeScript file is over 400 lines, and no function over 80. A vitest `describe(...)` callback
 * is exempt, because it is a list of tests rather than one piece of logic; each `it` body and
 * helper inside it is measured on its own. Generated files (under a `generated/` folder) are
 * written by `npm run generate`, not by hand, and are left out.
 */
import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import ts from 'typescript'
import { expect, it } from 'vitest'
import { PROJECT_ROOT } from '../../src/project-root.ts'

const MAX_FILE_LINES = 400
const MAX_FUNCTION_LINES = 80
const HAND_WRITTEN = ['src', 'test', 'bench', 'scripts', 'sdk/src', 'sdk/test']

async function handWrittenFiles(): Promise<string[]> {
  const files: string[] = []
  for (const folder of HAND_WRITTEN) {
    for (const entry of await readdir(path.join(PROJECT_ROOT, folder), {
      withFileTypes: true,
      recursive: true,
    })) {
      if (!entry.isFile() || !/\.tsx?$/.test(entry.name)) continue
      const file = path.relative(PROJECT_ROOT, path.join(entry.parentPath, entry.name))
      if (!file.split(path.sep).includes('generated')) files.push(file)
    }
  }
  return files.sort()
}

function linesOf(source: ts.SourceFile, node: ts.Node): { first: number; count: number } {
  const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1
  const last = source.getLineAndCharacterOfPosition(node.getEnd()).line + 1
  return { first, count: last - first + 1 }
}

/** The name a call is made through, down to its root: `describe.each(rows)(...)` is `describe`. */
function calleeRoot(callee: ts.Expression): string | undefined {
  if (ts.isIdentifier(callee)) return callee.text
  if (ts.isPropertyAccessExpression(callee)) return calleeRoot(callee.expression)
  if (ts.isCallExpression(callee)) return calleeRoot(callee.expression)
  return undefined
}

function isDescribeCallback(node: ts.Node): boolean {
  const call = node.parent
  return (
    call !== undefined &&
    ts.isCallExpression(call) &&
    call.arguments.some((argument) => argument === node) &&
    calleeRoot(call.expression) === 'describe'
  )
}

/** `path:line (n lines)` for each function of `text` longer than the limit. */
function longFunctions(file: string, text: string): string[] {
  const kind = file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind)
  const found: string[] = []
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body && !isDescribeCallback(node)) {
      const { first, count } = linesOf(source, node)
      if (count > MAX_FUNCTION_LINES) found.push(`${file}:${first} (${count} lines)`)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

function lineCount(text: string): number {
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0)
}

it(`keeps every hand-written file at ${MAX_FILE_LINES} lines or fewer`, async () => {
  const long: string[] = []
  for (const file of await handWrittenFiles()) {
    const lines = lineCount(await readFile(path.join(PROJECT_ROOT, file), 'utf8'))
    if (lines > MAX_FILE_LINES) long.push(`${file} (${lines} lines)`)
  }
  expect(long).toEqual([])
})

it(`keeps every function at ${MAX_FUNCTION_LINES} lines or fewer, but a describe callback`, async () => {
  const long: string[] = []
  for (const file of await handWrittenFiles()) {
    long.push(...longFunctions(file, await readFile(path.join(PROJECT_ROOT, file), 'utf8')))
  }
  expect(long).toEqual([])
})

it('measures a function from its first line to its last, and spares only the describe callback', () => {
  const body = (name: string) => `${Array.from({ length: 80 }, () => `  ${name}()`).join('\n')}\n`
  const text = [
    `function fits() {\n${body('a').split('\n').slice(2).join('\n')}}`,
    `function over() {\n${body('b')}}`,
    `describe('group', () => {\n${body('c')}})`,
    `describe.each([1])('rows', () => {\n${body('d')}})`,
    `it('case', async () => {\n${body('e')}})`,
    `const arrow = () => {\n${body('f')}}`,
  ].join('\n')
  const lineOf = (marker: string) => text.split('\n').findIndex((line) => line.startsWith(marker)) + 1
  expect(longFunctions('x.test.ts', text)).toEqual([
    `x.test.ts:${lineOf('function over')} (82 lines)`,
    `x.test.ts:${lineOf("it('case'")} (82 lines)`,
    `x.test.ts:${lineOf('const arrow')} (82 lines)`,
  ])
})
