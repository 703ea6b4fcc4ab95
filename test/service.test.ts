import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { publicDataDir } from '../src/db/embedded.ts'
import { freePort } from '../src/net/free-port.ts'
import { waitFor } from './support/queue.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const BIN = path.join(ROOT, 'bin', 'mailroom.js')
/** Generous bounds for a process to come up or go down; never asserted as timings. */
const STARTUP_LIMIT_MS = 90_000
const SHUTDOWN_LIMIT_MS = 60_000
const SLOW = 180_000

let dataDir: string
const started: ChildProcess[] = []

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'mailroom-service-'))
  // As root, PostgreSQL runs as the `postgres` user, which has to enter this directory.
  await chmod(dataDir, 0o755)
})

afterAll(async () => {
  for (const child of started) {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      child.kill('SIGTERM')
      await exitOf(child, SHUTDOWN_LIMIT_MS).catch(() => child.kill('SIGKILL'))
    }
  }
  // A cluster left behind by a failed test: stop it by the pid it recorded, then remove everything.
  const pid = await postmasterPid()
  if (pid !== undefined && alive(pid)) {
    process.kill(pid, 'SIGINT')
    for (let i = 0; i < 100 && alive(pid); i++) await sleep(100)
  }
  await rm(dataDir, { recursive: true, force: true })
}, SLOW)

/** Where a command runs: the checkout (or another directory), and settings beside the data dir. */
interface Where {
  cwd?: string
  env?: Record<string, string | undefined>
}

function environment(overrides: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, MAILROOM_DATA_DIR: dataDir, HOST: '127.0.0.1' }
  for (const name of ['DATABASE_URL', 'MAILROOM_SECRET', 'LOG_LEVEL']) delete env[name]
  for (const [name, value] of Object.entries(overrides)) {
    if (value === undefined) delete env[name]
    else env[name] = value
  }
  return env
}

interface Server {
  child: ChildProcess
  url: string
  stdout: () => string
  stderr: () => string
}

/** `mailroom start` with nothing configured but the data dir and the port. */
function startServer(port: number, extraArgs: string[] = [], where: Where = {}): Server {
  const child = spawn(process.execPath, [BIN, 'start', ...extraArgs], {
    cwd: where.cwd ?? ROOT,
    env: environment({ PORT: String(port), ...where.env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  started.push(child)
  let stdout = ''
  let stderr = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  return { child, url: `http://127.0.0.1:${port}`, stdout: () => stdout, stderr: () => stderr }
}

function exitOf(
  child: ChildProcess,
  limitMs: number,
): Promise<{ code: number | null; signal: string | null }> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode })
  }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`process ${child.pid} still running after ${limitMs} ms`)),
      limitMs,
    )
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal })
    })
  })
}

/** Polls GET /health until it answers 200; fails if the process exits first. */
async function waitUntilServing(server: Server, pollMs = 250): Promise<void> {
  const deadline = Date.now() + STARTUP_LIMIT_MS
  for (;;) {
    if (server.child.exitCode !== null || server.child.signalCode !== null) {
      throw new Error(`mailroom start exited (${server.child.exitCode}) before serving:\n${server.stderr()}`)
    }
    try {
      const response = await fetch(`${server.url}/health`)
      if (response.status === 200) return
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`mailroom start did not serve /health:\n${server.stderr()}`)
    await sleep(pollMs)
  }
}

interface Run {
  code: number
  stdout: string
  stderr: string
}

function mailroom(args: string[], where: Where = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd: where.cwd ?? ROOT, env: environment(where.env), timeout: STARTUP_LIMIT_MS },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr })
      },
    )
  })
}

function ok<T>(run: Run): T {
  expect(run, `stderr: ${run.stderr}`).toMatchObject({ code: 0 })
  return JSON.parse(run.stdout) as T
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

async function findFile(dir: string, name: string): Promise<string | undefined> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => [])
  for (const entry of entries) {
    const full = path.join(dir, entry.name)
    if (entry.isFile() && entry.name === name) return full
    if (entry.isDirectory()) {
      const found = await findFile(full, name)
      if (found) return found
    }
  }
  return undefined
}

async function postmasterPid(dir = dataDir): Promise<number | undefined> {
  const file = dir ? await findFile(dir, 'postmaster.pid') : undefined
  if (!file) return undefined
  const pid = Number((await readFile(file, 'utf8')).split('\n')[0])
  return Number.isInteger(pid) && pid > 0 ? pid : undefined
}

/** Processes whose command line mentions the data dir (the cluster's postmaster and its children). */
async function processesUsingDataDir(): Promise<number[]> {
  const pids: number[] = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')
    if (cmdline.includes(dataDir) && !cmdline.includes('bin/mailroom.js')) pids.push(Number(entry))
  }
  return pids
}

/** The regular files at the top of the data dir (the cluster lives in a directory of its own). */
async function topLevelFiles(): Promise<string[]> {
  const entries = await readdir(dataDir, { withFileTypes: true })
  return entries.filter((e) => e.isFile()).map((e) => path.join(dataDir, e.name))
}

/** Sends SIGTERM; the server exits 0, not by the signal, within the shutdown limit. */
async function expectCleanExitOnSigterm(server: Server): Promise<void> {
  server.child.kill('SIGTERM')
  expect(await exitOf(server.child, SHUTDOWN_LIMIT_MS), server.stderr()).toEqual({ code: 0, signal: null })
}

async function expectDatabaseStopped(): Promise<void> {
  const pid = await postmasterPid()
  if (pid !== undefined) expect(alive(pid), `postmaster ${pid} is still running`).toBe(false)
  expect(await processesUsingDataDir()).toEqual([])
}

describe('mailroom start with nothing configured (embedded PostgreSQL)', () => {
  let account: { id: number; email: string; plan: string }
  let secretFiles: Map<string, string>

  it(
    'creates the cluster, migrates, serves, lets an operator command join, and stops cleanly on SIGTERM',
    async () => {
      const server = startServer(await freePort())
      await waitUntilServing(server)

      const health = await fetch(`${server.url}/health`)
      expect(health.status).toBe(200)
      // The embedded cluster runs under the data dir (what the stop checks below look for).
      const postmaster = await postmasterPid()
      expect(postmaster).toBeDefined()
      expect(alive(postmaster as number)).toBe(true)
      expect(await processesUsingDataDir()).toContain(postmaster)

      const openapi = await fetch(`${server.url}/v1/openapi.json`)
      expect(openapi.status).toBe(200)
      const document = (await openapi.json()) as { info?: { version?: string } }
      expect(document.info?.version).toBe('1.3.0')

      const reference = await fetch(`${server.url}/reference`)
      expect(reference.status).toBe(200)
      expect(reference.headers.get('content-type')).toMatch(/text\/html/)
      expect((await reference.text()).toLowerCase()).toContain('<html')

      // The API is the real one on a migrated database: an unknown key is refused, not a 500.
      const unauthorised = await fetch(`${server.url}/v1/send`, {
        method: 'POST',
        headers: { authorization: 'Bearer mr_unknown', 'content-type': 'application/json' },
        body: JSON.stringify({ to: 'a@example.com', subject: 'x', text_body: 'y' }),
      })
      expect(unauthorised.status).toBe(401)
      expect(await unauthorised.json()).toEqual({ error: 'Invalid or expired API token' })

      // The generated MAILROOM_SECRET is kept in the data dir, readable by its owner only.
      secretFiles = new Map()
      for (const file of await topLevelFiles()) {
        const content = await readFile(file, 'utf8')
        if (!/[A-Za-z0-9_-]{32,}/.test(content)) continue
        expect({ file, mode: (await stat(file)).mode & 0o777 }).toEqual({ file, mode: 0o600 })
        secretFiles.set(file, content)
      }
      expect(secretFiles.size).toBeGreaterThan(0)

      // An operator command on the same data dir joins the running cluster.
      account = ok(
        await mailroom(['account', 'create', '--email', 'embedded-owner@example.com', '--plan', 'pro']),
      )
      expect(account).toMatchObject({
        id: expect.any(Number),
        email: 'embedded-owner@example.com',
        plan: 'pro',
      })
      // ... and leaves it running for the server.
      expect((await fetch(`${server.url}/health`)).status).toBe(200)

      await expectCleanExitOnSigterm(server)
      // Logs go to stderr; stdout stays clean.
      expect(server.stdout()).toBe('')
      await expectDatabaseStopped()
    },
    SLOW,
  )

  it(
    'reuses the cluster and the secret on a second start; the account is still there',
    async () => {
      const server = startServer(await freePort())
      await waitUntilServing(server)
      const accounts = ok<{ id: number; email: string }[]>(await mailroom(['account', 'list']))
      expect(accounts.map((a) => [a.id, a.email])).toEqual([[account.id, 'embedded-owner@example.com']])
      for (const [file, content] of secretFiles) expect(await readFile(file, 'utf8')).toBe(content)

      await expectCleanExitOnSigterm(server)
      await expectDatabaseStopped()
    },
    SLOW,
  )

  it(
    'refuses start --worker-only --no-worker',
    async () => {
      const port = await freePort()
      const server = startServer(port, ['--worker-only', '--no-worker'])
      const exit = await exitOf(server.child, STARTUP_LIMIT_MS)
      expect(exit.code).not.toBe(0)
      expect(exit.code).not.toBeNull()
      expect(server.stdout()).toBe('')
      const lastLine = server.stderr().trimEnd().split('\n').at(-1) ?? ''
      expect(lastLine).toMatch(/worker-only/)
      expect(lastLine).toMatch(/no-worker/)
      // It never served.
      await expect(fetch(`http://127.0.0.1:${port}/health`)).rejects.toThrow()
      await expectDatabaseStopped()
    },
    SLOW,
  )

  it(
    'stops cleanly on a SIGTERM that arrives as soon as it serves',
    async () => {
      const server = startServer(await freePort())
      // SIGTERM the moment /health first answers: start-up may still be finishing behind it.
      await waitUntilServing(server, 20)
      await expectCleanExitOnSigterm(server)
      await expectDatabaseStopped()
    },
    SLOW,
  )
})

describe.runIf(process.getuid?.() === 0)(
  'mailroom start as root in a checkout under a 0700 directory',
  () => {
    let closed: string
    let checkout: string
    // Nothing set but the port: the default data dir, ./.mailroom, lies where `postgres` cannot go.
    const where = (): Where => ({ cwd: checkout, env: { MAILROOM_DATA_DIR: undefined } })

    beforeAll(async () => {
      closed = await mkdtemp(path.join(os.tmpdir(), 'mailroom-home-'))
      await chmod(closed, 0o700)
      checkout = path.join(closed, 'mailroom')
      await mkdir(checkout)
    })

    afterAll(async () => {
      const pid = await postmasterPid(publicDataDir(checkout))
      if (pid !== undefined && alive(pid)) process.kill(pid, 'SIGINT')
      for (let i = 0; pid !== undefined && i < 100 && alive(pid); i++) await sleep(100)
      await rm(publicDataDir(checkout), { recursive: true, force: true })
      await rm(closed, { recursive: true, force: true })
    }, SLOW)

    it(
      'keeps the embedded database in /var/lib/mailroom/<checkout>-<hash>, says so, and operator commands find it',
      async () => {
        const server = startServer(await freePort(), [], where())
        await waitUntilServing(server)
        // The relay opens after /health answers; its self-signed certificate is kept beside the database.
        await waitFor(
          () => `the relay listening (output: ${server.stderr()})`,
          () => (server.stderr().includes('Mailroom SMTP relay listening') ? true : undefined),
          STARTUP_LIMIT_MS,
        )
        const moved = publicDataDir(checkout)
        expect(existsSync(path.join(moved, 'smtp-relay-tls.pem'))).toBe(true)
        expect(server.stderr()).toContain(`the postgres user cannot enter ${closed}`)
        expect(server.stderr()).toContain(`the embedded database lives in ${moved}`)
        expect(existsSync(path.join(moved, 'pg', 'PG_VERSION'))).toBe(true)
        expect(existsSync(path.join(checkout, '.mailroom'))).toBe(false)

        const account = ok<{ id: number }>(
          await mailroom(['account', 'create', '--email', 'closed-home@example.com'], where()),
        )
        expect(ok<{ id: number }[]>(await mailroom(['account', 'list'], where()))).toEqual([
          expect.objectContaining({ id: account.id, email: 'closed-home@example.com' }),
        ])
        await expectCleanExitOnSigterm(server)
        const pid = await postmasterPid(moved)
        if (pid !== undefined) expect(alive(pid)).toBe(false)
      },
      SLOW,
    )
  },
)
