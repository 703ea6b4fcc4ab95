/**
 * The package as published: what `npm pack` puts in it, and that ES module and CommonJS callers
 * both load it and type-check against it. Runs against sdk/dist, which the root `pretest` (and
 * `npm run build -w sdk`) builds.
 */
import { execFile } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const run = promisify(execFile)
const SDK = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const ROOT = path.resolve(SDK, '..')

/** A client with a canned fetch, listing templates: exercises openapi-fetch under each loader. */
const USE = `
  const client = sdk.createClient({
    baseUrl: 'http://127.0.0.1:3000/v1',
    apiKey: 'mr_key',
    fetch: async () => Response.json({ success: true, templates: [] }),
  })
  const list = await client.templates.list()
  console.log(JSON.stringify({ createClient: typeof sdk.createClient, list }))
`

/** Runs node with `args` from the repository root, where the workspace links @mailroom/sdk. */
async function node(args: string[]): Promise<unknown> {
  const { stdout } = await run(process.execPath, args, { cwd: ROOT })
  return JSON.parse(stdout)
}

describe('the published package', () => {
  it('packs LICENSE, README.md, package.json and both builds, without sources or tests', async () => {
    // --ignore-scripts: `prepack` would rebuild dist while other test files import it.
    const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: SDK })
    const [pack] = JSON.parse(stdout) as { name: string; files: { path: string }[] }[]
    const files = (pack?.files ?? []).map((f) => f.path).sort()

    expect(pack?.name).toBe('@mailroom/sdk')
    expect(files).toEqual(expect.arrayContaining(['LICENSE', 'README.md', 'package.json']))
    for (const build of ['esm', 'cjs']) {
      for (const file of ['index', 'client', 'core', 'errors', 'generated/operations', 'generated/schema']) {
        expect(files).toContain(`dist/${build}/${file}.js`)
        expect(files).toContain(`dist/${build}/${file}.d.ts`)
      }
    }
    expect(files).toContain('dist/cjs/package.json')
    const unexpected = files.filter(
      (f) =>
        !/^(LICENSE|README\.md|package\.json|dist\/(esm|cjs)\/.+\.(js|d\.ts)|dist\/cjs\/package\.json)$/.test(
          f,
        ),
    )
    expect(unexpected).toEqual([])
    const inBuild = (build: string) =>
      files
        .filter((f) => f.startsWith(`dist/${build}/`) && f !== 'dist/cjs/package.json')
        .map((f) => f.slice(9))
    expect(inBuild('cjs')).toEqual(inBuild('esm'))
  })

  it('loads with import() from an ES module, from dist/esm', async () => {
    const result = await node([
      '--input-type=module',
      '--eval',
      `const sdk = await import('@mailroom/sdk')
       if (!import.meta.resolve('@mailroom/sdk').endsWith('/sdk/dist/esm/index.js')) throw new Error('not the ESM build')
       ${USE}`,
    ])
    expect(result).toEqual({ createClient: 'function', list: { success: true, templates: [] } })
  })

  it('loads with require() from CommonJS, from dist/cjs', async () => {
    const result = await node([
      '--input-type=commonjs',
      '--eval',
      `const sdk = require('@mailroom/sdk')
       if (!require.resolve('@mailroom/sdk').endsWith('/sdk/dist/cjs/index.js')) throw new Error('not the CJS build')
       ;(async () => { ${USE} })().catch((error) => { console.error(error); process.exitCode = 1 })`,
    ])
    expect(result).toEqual({ createClient: 'function', list: { success: true, templates: [] } })
  })

  it('type-checks an ES module caller and a CommonJS caller (node16 resolution)', async () => {
    const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc')
    const fixtures = ['consumer.mts', 'consumer.cts'].map((f) => path.join(SDK, 'test/consumers', f))
    const { stdout } = await run(process.execPath, [
      tsc,
      '--noEmit',
      '--strict',
      '--module',
      'node16',
      '--moduleResolution',
      'node16',
      '--target',
      'es2022',
      '--types',
      'node',
      '--traceResolution',
      ...fixtures,
    ])
    // Each caller got the types of its own build.
    const resolved = [
      ...stdout.matchAll(/Module name '@mailroom\/sdk' was successfully resolved to '([^']+)'/g),
    ]
    expect(resolved.map((m) => path.relative(SDK, m[1] as string)).sort()).toEqual([
      'dist/cjs/index.d.ts',
      'dist/esm/index.d.ts',
    ])
  }, 120_000)
})
