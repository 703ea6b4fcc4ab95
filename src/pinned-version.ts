import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

/** The version of the package `name` as installed (its package.json, wherever node resolves it). */
export function installedVersion(name: string): string {
  return (require(`${name}/package.json`) as { version: string }).version
}

/**
 * Refuses to run on any version of a package other than the one whose internals Mailroom was
 * written against: an upgrade fails here, at start, with one message, rather than somewhere deep
 * in a send or a queue run. The internals are listed in docs/architecture.md.
 */
export function refuseUnpinned(name: string, writtenAgainst: string, installed: string): void {
  if (installed === writtenAgainst) return
  throw new Error(
    `${name} ${installed} is installed, but Mailroom relies on internals of ${name} ${writtenAgainst} ` +
      `(docs/architecture.md, "Third-party internals"): install ${name} ${writtenAgainst}, or check ` +
      `each of those internals against ${installed} and then move the pin`,
  )
}
