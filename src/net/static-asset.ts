import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'

/**
 * A file the app serves to browsers (a stylesheet, a script) or a document it makes once, made
 * when first asked for. Pages link it by an address that carries a hash of its content (`href`),
 * so that browsers may keep it for a year: a new version has a new address. Asked for at its
 * plain path (`/v1/openapi.json`), it is revalidated by its ETag each time.
 */
export interface StaticAsset {
  /** Where it is served. */
  readonly path: string
  /** The address to put in pages: `urlPath?v=<hash>`. */
  readonly href: string
  /** The answer to a GET of `urlPath` (304 when the browser's copy is current). */
  respond(request: Request): Response
}

const require = createRequire(import.meta.url)

/** The path of `file` inside the installed npm package `name`, whatever its `exports` allow. */
export function packageFile(name: string, file: string): string {
  const entry = require.resolve(name)
  const marker = `${path.sep}node_modules${path.sep}${name.split('/').join(path.sep)}${path.sep}`
  const at = entry.lastIndexOf(marker)
  if (at < 0) throw new Error(`cannot find the folder of the package ${name} (resolved to ${entry})`)
  return path.join(entry.slice(0, at + marker.length), file)
}

export function staticAsset(file: string, urlPath: string, contentType: string): StaticAsset {
  return servedBytes(() => readFileSync(file), urlPath, contentType)
}

/**
 * Bytes the app makes once and serves unchanged for its whole life (a file, a document it
 * renders), made when first asked for, with the same caching as a file.
 */
export function servedBytes(make: () => Buffer, urlPath: string, contentType: string): StaticAsset {
  let made: { body: Buffer; hash: string } | undefined
  const load = () => {
    if (!made) {
      const body = make()
      made = { body, hash: createHash('sha256').update(body).digest('base64url').slice(0, 16) }
    }
    return made
  }
  return {
    path: urlPath,
    get href() {
      return `${urlPath}?v=${load().hash}`
    },
    respond(request) {
      const { body, hash } = load()
      const etag = `"${hash}"`
      const versioned = new URL(request.url).searchParams.get('v') === hash
      const headers = {
        'Content-Type': contentType,
        ETag: etag,
        'Cache-Control': versioned ? 'public, max-age=31536000, immutable' : 'no-cache',
        'X-Content-Type-Options': 'nosniff',
      }
      if (request.headers.get('if-none-match') === etag) return new Response(null, { status: 304, headers })
      return new Response(new Uint8Array(body), { status: 200, headers })
    },
  }
}
