/**
 * `npm run build` (and `npm install`, through `prepare`): the service and its operator command
 * bundled into dist/mailroom.js, which bin/mailroom.js runs while no source is newer. Packages
 * stay outside the bundle and are imported from node_modules as they are.
 */
import { mkdir, rename, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { PROJECT_ROOT as ROOT } from '../src/project-root.ts'

/** Bundles src/cli/main.ts into `outfile`, replacing it in one step: a process starting meanwhile reads the old build or the new. */
export async function buildService(outfile = path.join(ROOT, 'dist', 'mailroom.js')): Promise<void> {
  const result = await build({
    entryPoints: [path.join(ROOT, 'src', 'cli', 'main.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    tsconfig: path.join(ROOT, 'tsconfig.json'),
    write: false,
    logLevel: 'warning',
  })
  for (const file of result.outputFiles) {
    const partial = `${file.path}.${process.pid}.partial`
    await mkdir(path.dirname(file.path), { recursive: true })
    await writeFile(partial, file.contents)
    await rename(partial, file.path)
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildService()
