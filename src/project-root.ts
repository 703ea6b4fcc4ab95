import { existsSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * The checkout's root, where package.json is: the files the service reads at run time (the
 * OpenAPI document, the migrations, the dashboard's stylesheet) are found from here, the same
 * whether this module runs from src/ or bundled into dist/ (see scripts/build.ts).
 */
export const PROJECT_ROOT = rootAbove(path.dirname(fileURLToPath(import.meta.url)))

function rootAbove(dir: string): string {
  if (existsSync(path.join(dir, 'package.json'))) return dir
  const parent = path.dirname(dir)
  if (parent === dir) throw new Error('no package.json above the running code')
  return rootAbove(parent)
}
