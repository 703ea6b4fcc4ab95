import { createHash, randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { chmod, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import type { Logger } from '../log.ts'
import { freePort } from '../net/free-port.ts'
import {
  firstClosedAncestor,
  isRoot,
  mkdirOpen,
  PUBLIC_ROOT,
  startPostgresServer,
} from './postgres-server.ts'
import { connect } from './sql.ts'

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
 * Where the embedded database lives. As root, PostgreSQL runs as the `postgres` user, which
 * must enter the data dir: when the default (`./.mailroom`) lies under a directory closed to
 * it, as in a checkout under `/root`, the default moves to PUBLIC_ROOT, under a name of the
 * checkout's own (docs/decisions.md, "Names and settings"). A data dir the operator chose is
 * never moved: they are told why it cannot be used.
 */
export async function embeddedDataDir(
  dataDir: string,
  isDefault: boolean,
): Promise<{ dataDir: string; movedBecause?: string }> {
  if (!isRoot()) return { dataDir }
  const closed = await firstClosedAncestor(dataDir)
  if (!closed) return { dataDir }
  if (!isDefault) {
    throw new Error(
      `As root, the embedded PostgreSQL runs as the "postgres" user, which cannot enter ${closed}. ` +
        `Set MAILROOM_DATA_DIR to a directory outside it (or leave it unset to use ${PUBLIC_ROOT}) or use DATABASE_URL.`,
    )
  }
  return { dataDir: publicDataDir(path.dirname(dataDir)), movedBecause: closed }
}

/** `/var/lib/mailroom/<checkout name>-<short hash of its path>`: one per checkout, stable across runs. */
export function publicDataDir(checkout: string): string {
  const hash = createHash('sha256').update(path.resolve(checkout)).digest('hex').slice(0, 8)
  return path.join(PUBLIC_ROOT, `${path.basename(checkout) || 'root'}-${hash}`)
}

/**
 * Starts the PostgreSQL cluster under `dataDir`, creating it on first use, or joins the one
 * another Mailroom process (the server, while an operator runs a command) already runs there.
 */
export async function openEmbeddedDatabase(dataDir: string, log: Logger): Promise<EmbeddedDatabase> {
  await mkdirOpen(dataDir)
  const state = await loadOrCreateState(dataDir)
  const clusterDir = path.join(dataDir, 'pg')
  const url = (port: number) =>
    `postgres://postgres:${encodeURIComponent(state.password)}@127.0.0.1:${port}/${DATABASE}`
  const runningPort = await portOfRunningCluster(clusterDir)
  if (runningPort !== undefined) return { url: url(runningPort), secret: state.secret, stop: async () => {} }

  const port = await freePort()
  const server = await startPostgresServer({ clusterDir, port, password: state.password, log })
  try {
    await createDatabase(server.url)
  } catch (error) {
    await server.stop()
    throw error
  }
  log.info({ port }, 'embedded PostgreSQL started')
  return { url: url(port), secret: state.secret, stop: server.stop }
}

async function createDatabase(serverUrl: string): Promise<void> {
  const admin = connect(serverUrl, 1)
  try {
    const [found] = await admin`select 1 from pg_database where datname = ${DATABASE}`
    if (!found) await admin.unsafe(`create database ${DATABASE}`)
  } finally {
    await admin.end()
  }
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
