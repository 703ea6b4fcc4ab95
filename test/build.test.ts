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
   * starts: allocates 200 MB of short-lived objects, then says how large the young generation
   * grew, and stops the process.
   */
  const probe = `
    if (process.argv[1]?.endsWith('mailroom.js')) {
      let keep = []
      for (let i = 0; i < 2e6; i++) { keep.push({ i, s: 'x' + i }); if (keep.length > 50000) keep = [] }
      const young = require('v8').getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')
      process.stdout.write('young generation: ' + young.space_size / 1048576 + ' MiB\\n')
      process.exit(0)
    }`
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mailroom-young-'))
    await writeFile(path.join(dir, 'probe.cjs'), probe)
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  async function youngGeneration(command: string, args: string[]): Promise<string> {
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
    return output
  }

  it('has a young generation of 16 MiB, half the default of V8: the flag on the first line of bin/mailroom.js', async () => {
    expect(await youngGeneration('npm', ['start', '--silent'])).toContain('young generation: 16 MiB')
    expect(await youngGeneration(path.join(ROOT, 'bin', 'mailroom.js'), ['start'])).toContain(
      'young generation: 16 MiB',
    )
    // Without the flag, the same allocations grow it to V8's default.
    expect(await youngGeneration(process.execPath, ['bin/mailroom.js', 'start'])).toContain(
      'young generation: 32 MiB',
    )
  })
})

describe('the build (scripts/build.ts)', () => {
  // Inside the checkout, as dist/mailroom.js is: the build finds the files it reads at run time
  // (the contract, the migrations, the dashboard's assets) from the checkout's root.
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

  async function run(args: string[]): Promise<{ code: number | null; output: string }> {
    const command = spawnMailroom(args, mailroomEnv(db.url), bundle)
    const [code] = (await once(command.child, 'exit')) as [number | null]
    return { code, output: command.output() }
  }
})
