/**
 * `npm run build` (and `npm install`, through `prepare`): the service and its operator command
 * bundled into dist/mailroom.js, which bin/mailroom.js runs while no source is newer. Packages
 * stay outside the bundle and are imported from node_modules as they are.
 */
import { mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { PROJECT_ROOT as ROOT } from '../src/project-root.ts'

const DAY_MS = 24 * 60 * 60 * 1000

/**
 * Bundles src/cli/main.ts into `outfile`, each file replaced in one step: a process starting
 * meanwhile reads the old build or the new. What main.ts imports when a command needs it (the
 * services, the server and worker) goes to chunks beside it, named by their content, so that an
 * operator command loads only what it runs.
 */
export async function buildService(outfile = path.join(ROOT, 'dist', 'mailroom.js')): Promise<void> {
  const result = await build({
    entryPoints: [path.join(ROOT, 'src', 'cli', 'main.ts')],
    outdir: path.dirname(outfile),
    entryNames: path.basename(outfile, '.js'),
    chunkNames: 'chunks/[name]-[hash]',
    splitting: true,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    tsconfig: path.join(ROOT, 'tsconfig.json'),
    write: false,
    logLevel: 'warning',
  })
  // Chunks first: the entry that names them is written last.
  const isChunk = (file: { path: string }) => file.path.includes(`${path.sep}chunks${path.sep}`)
  for (const file of [
    ...result.outputFiles.filter(isChunk),
    ...result.outputFiles.filter((f) => !isChunk(f)),
  ]) {
    const partial = `${file.path}.${process.pid}.partial`
    await mkdir(path.dirname(file.path), { recursive: true })
    await writeFile(partial, file.contents)
    await rename(partial, file.path)
  }
  await removeOldChunks(
    path.join(path.dirname(outfile), 'chunks'),
    new Set(result.outputFiles.map((f) => f.path)),
  )
}

/**
 * Chunks of earlier builds, once a day old: a process started from such a build loaded its
 * chunks as it started, and a chunk of this build is never removed.
 */
async function removeOldChunks(dir: string, current: Set<string>): Promise<void> {
  for (const name of await readdir(dir).catch(() => [])) {
    const file = path.join(dir, name)
    if (!current.has(file) && Date.now() - (await stat(file)).mtimeMs > DAY_MS)
      await rm(file, { force: true })
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildService()
