import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { entryOf } from '../bin/entry.js'
import { buildService } from '../scripts/build.ts'
import { loadOpenApiDocument } from '../src/http/openapi-document.ts'
import { freePort } from '../src/net/free-port.ts'
import { createTestDatabase, type TestDatabase } from './support/database.ts'
import { type MailroomProcess, mailroomEnv, ROOT, spawnMailroom, waitHealthy } from './support/queue.ts'

describe('what `mailroom` runs', () => {
  let checkout: string
  const at = (relative: string) => path.join(checkout, relative)
  /** Sets a file's modification time, `secondsAgo` before now. */
  const touch = (relative: string, secondsAgo: number) => {
    const when = new Date(Date.now() - secondsAgo * 1000)
    return utimes(at(relative), when, when)
  }

  beforeAll(async () => {
    checkout = await mkdtemp(path.join(os.tmpdir(), 'mailroom-entry-'))
    await mkdir(at('src/cli'), { recursive: true })
    await mkdir(at('src/db/migrations'), { recursive: true })
    await mkdir(at('dist'))
    for (const file of ['src/cli/main.ts', 'src/db/migrations/001_first.sql', 'dist/mailroom.js']) {
      await writeFile(at(file), '')
    }
  })

  afterAll(() => rm(checkout, { recursive: true, force: true }))

  it('runs the build when no source is newer than it', async () => {
    await touch('src/cli/main.ts', 60)
    await touch('src/db/migrations/001_first.sql', 60)
    await touch('dist/mailroom.js', 30)
    expect(entryOf(checkout)).toEqual({ kind: 'build', file: at('dist/mailroom.js') })
  })

  it('runs the sources when any file under src/ changed after the build, however deep', async () => {
    await touch('dist/mailroom.js', 30)
    await touch('src/cli/main.ts', 60)
    await touch('src/db/migrations/001_first.sql', 10)
    expect(entryOf(checkout)).toEqual({ kind: 'sources', file: at('src/cli/main.ts') })
  })

  it('runs the sources when there is no build', async () => {
    await rm(at('dist/mailroom.js'))
    expect(entryOf(checkout)).toEqual({ kind: 'sources', file: at('src/cli/main.ts') })
  })
})

describe('the Node process `npm start` runs', () => {
  /**
   * Run inside the service's process (and npm's, where it does nothing) before the service
   * starts, then stops the process. First it churns through short-lived objects: how large the
   * young generation grows. Then, holding about 25 MiB live, through objects that live long
   * enough to be promoted: how large the old generation grows before a major collection
   * reclaims them (V8's default let it reach 131 to 143 MiB here, the flag 69 to 77).
   */
  const probe = `
    if (process.argv[1]?.endsWith('mailroom.js')) {
      const space = (name) =>
        require('v8').getHeapSpaceStatistics().find((s) => s.space_name === name).space_size / 1048576
      let keep = []
      for (let i = 0; i < 2e6; i++) { keep.push({ i, s: 'x' + i }); if (keep.length > 50000) keep = [] }
      const young = space('new_space')
      const live = []
      for (let i = 0; i < 3e5; i++) live.push({ i, s: 'live' + i })
      let old = 0
      for (let i = 0; i < 6e6; i++) {
        keep.push({ i, s: 'x' + i })
        if (keep.length > 2e5) keep = []
        if (i % 2e4 === 0) old = Math.max(old, space('old_space'))
      }
      process.stdout.write(JSON.stringify({ young, old, live: live.length }) + '\\n')
      process.exit(0)
    }`
  interface Heap {
    young: number
    old: number
  }
  let dir: string
  let heaps: { npmStart: Heap; executable: Heap; plainNode: Heap }

  async function heapOf(command: string, args: string[]): Promise<Heap> {
    const child = spawn(command, args, {
      cwd: ROOT,
      env: { ...process.env, NODE_OPTIONS: `--require ${path.join(dir, 'probe.cjs')}` },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString()
    })
    await once(child, 'exit')
    const line = output.split('\n').find((l) => l.startsWith('{'))
    if (!line) throw new Error(`the probe said nothing: ${output}`)
    return JSON.parse(line) as Heap
  }

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mailroom-heap-'))
    await writeFile(path.join(dir, 'probe.cjs'), probe)
    heaps = {
      npmStart: await heapOf('npm', ['start', '--silent']),
      executable: await heapOf(path.join(ROOT, 'bin', 'mailroom.js'), ['start']),
      // Without the first line's flags: V8's defaults.
      plainNode: await heapOf(process.execPath, ['bin/mailroom.js', 'start']),
    }
  }, 60_000)
  afterAll(() => rm(dir, { recursive: true, force: true }))

  it('has a young generation of 16 MiB, half the default of V8: a flag on the first line of bin/mailroom.js', () => {
    expect(heaps.npmStart.young).toBe(16)
    expect(heaps.executable.young).toBe(16)
    expect(heaps.plainNode.young).toBe(32)
  })

  it('lets the old generation grow to about twice what is live, not up to four times as V8 would: a flag on the first line', () => {
    expect(heaps.npmStart.old).toBeLessThan(100)
    expect(heaps.executable.old).toBeLessThan(100)
    expect(heaps.plainNode.old).toBeGreaterThan(100)
  })
})

describe('the build (scripts/build.ts)', () => {
  // Inside the checkout, as dist/mailroom.js is: the build finds the files it reads at run time
  // (the contract, the migrations, the database's functions, the dashboard's assets) from the
  // checkout's root.
  const outDir = path.join(ROOT, 'dist', `build-test-${process.pid}`)
  const bundle = path.join(outDir, 'mailroom.js')
  let db: TestDatabase
  let server: MailroomProcess | undefined

  beforeAll(async () => {
    await buildService(bundle)
    db = await createTestDatabase()
  }, 60_000)

  afterAll(async () => {
    await server?.stop()
    await db?.drop()
    await rm(outDir, { recursive: true, force: true })
  })

  it('serves what the sources serve: health, the contract, the reference and its script, the dashboard and its stylesheet', async () => {
    const port = await freePort()
    const url = `http://127.0.0.1:${port}`
    const started = spawnMailroom(
      ['start'],
      mailroomEnv(db.url, { PORT: String(port), HOST: '127.0.0.1' }),
      bundle,
    )
    server = started
    await waitHealthy(started, url)
    expect(await (await fetch(`${url}/v1/openapi.json`)).json()).toEqual(loadOpenApiDocument())
    const reference = await fetch(`${url}/reference`)
    expect(reference.status).toBe(200)
    expect(await reference.text()).toContain('/reference/scalar.js')
    expect((await fetch(`${url}/reference/scalar.js`)).status).toBe(200)
    expect((await fetch(`${url}/dashboard/login`)).status).toBe(200)
    const stylesheet = await fetch(`${url}/dashboard/assets/dashboard.css`)
    expect(stylesheet.status).toBe(200)
    expect(stylesheet.headers.get('content-type')).toMatch(/^text\/css/)
    expect(await stylesheet.text()).toBe(
      await readFile(path.join(ROOT, 'src/dashboard/assets/dashboard.css'), 'utf8'),
    )
  }, 90_000)

  it('runs the operator command: its version is the package’s, and an account it creates is in the database', async () => {
    const { version } = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as {
      version: string
    }
    const printed = await run(['--version'])
    expect(printed).toEqual({ code: 0, output: `${version}\n` })
    const created = await run(['account', 'create', '--email', 'built@example.com'])
    expect(created.code).toBe(0)
    const { id } = JSON.parse(created.output) as { id: number }
    const [row] = await db.sql<{ email: string }[]>`select email from accounts where id = ${id}`
    expect(row?.email).toBe('built@example.com')
  }, 60_000)

  it('makes the database’s functions from the checkout’s src/db/functions, as the sources do', async () => {
    const definition = () =>
      db.sql`select pg_get_functiondef('api_timestamp(timestamptz)'::regprocedure) as text`
    const [fresh] = await definition()
    await db.sql`create or replace function api_timestamp(t timestamptz) returns text
      language sql immutable as $$ select t::text $$`
    expect(await definition()).not.toEqual([fresh])
    expect((await run(['migrate'])).code).toBe(0)
    expect(await definition()).toEqual([fresh])
  }, 60_000)

  it('loads the server, the worker and the services only for a command that needs them', async () => {
    /** The packages a built file imports as it loads, following the chunks it loads with it. */
    const loadedWith = async (file: string, seen = new Set<string>()): Promise<Set<string>> => {
      const packages = new Set<string>()
      const source = await readFile(file, 'utf8')
      for (const [, spec = ''] of source.matchAll(/^import\s[^;]*?from\s*"([^"]+)"/gm)) {
        const chunk = path.resolve(path.dirname(file), spec)
        if (!spec.startsWith('.')) packages.add(spec)
        else if (!seen.has(chunk)) {
          seen.add(chunk)
          for (const name of await loadedWith(chunk, seen)) packages.add(name)
        }
      }
      return packages
    }
    const atStart = await loadedWith(bundle)
    expect([...atStart]).toContain('commander')
    for (const heavy of ['hono', '@hono/node-server', '@scalar/hono-api-reference', 'prom-client'])
      expect(atStart, heavy).not.toContain(heavy)
  })

  async function run(args: string[]): Promise<{ code: number | null; output: string }> {
    const command = spawnMailroom(args, mailroomEnv(db.url), bundle)
    const [code] = (await once(command.child, 'exit')) as [number | null]
    return { code, output: command.output() }
  }
})
