/**
 * What the requests and runs of a process share is built by openServices and held in Services
 * (docs/architecture.md, "No hidden state"): no module keeps a cache, a batcher or a counter of
 * its own, outside the few that are the process's by nature and say so.
 */
import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import { expect, it } from 'vitest'

const SRC = path.resolve(import.meta.dirname, '../../src')

/**
 * A module-level declaration that holds state: a `let`, or a `const` made by a constructor of
 * changing contents (a map, a weak map or set, a batcher, a cache), or kept per database pool.
 */
const MODULE_STATE =
  /^(?:export )?(?:let \w+|const \w+(?:: [^=]+)? = (?:new (?:Map|WeakMap|WeakSet|Rounds|KeyedRounds|ExpiringCache)\b|perPool\())/gm

/** Module state that is the process's own: one memory, one event loop, objects it marks. */
const THE_PROCESS_OWN = [
  'accounts/passwords.ts: let hashing',
  'http/body-turns.ts: const turns',
  'net/request-guard.ts: const counted',
  'net/request-guard.ts: const timedOut',
  'smtp/pool.ts: const limits',
]

async function moduleState(): Promise<string[]> {
  const found: string[] = []
  for (const entry of await readdir(SRC, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !/\.tsx?$/.test(entry.name)) continue
    const file = path.join(entry.parentPath, entry.name)
    for (const [declaration] of (await readFile(file, 'utf8')).matchAll(MODULE_STATE)) {
      const name = /(?:let|const) \w+/.exec(declaration)?.[0]
      found.push(`${path.relative(SRC, file)}: ${name}`)
    }
  }
  return found.sort()
}

it('keeps no cache or batcher at module level', async () => {
  expect(await moduleState()).toEqual(THE_PROCESS_OWN)
})
