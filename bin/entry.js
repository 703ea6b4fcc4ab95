import { readdirSync, statSync } from 'node:fs'
import path from 'node:path'

/**
 * What `mailroom` runs in the checkout at `root`: the build (dist/mailroom.js, see
 * scripts/build.ts) when no file under src/ is newer than it, otherwise the sources themselves.
 *
 * @param {string} root
 * @returns {{ kind: 'build' | 'sources', file: string }}
 */
export function entryOf(root) {
  const build = path.join(root, 'dist', 'mailroom.js')
  const built = modifiedAt(build)
  const fresh = built !== undefined && newestUnder(path.join(root, 'src')) <= built
  return fresh
    ? { kind: 'build', file: build }
    : { kind: 'sources', file: path.join(root, 'src', 'cli', 'main.ts') }
}

/** @param {string} file */
function modifiedAt(file) {
  try {
    return statSync(file).mtimeMs
  } catch {
    return undefined
  }
}

/** @param {string} dir */
function newestUnder(dir) {
  let newest = 0
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) newest = Math.max(newest, statSync(path.join(entry.parentPath, entry.name)).mtimeMs)
  }
  return newest
}
