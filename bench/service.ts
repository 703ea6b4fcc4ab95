/**
 * The service as the benchmark runs it: `mailroom start` as a process of its own, on a data dir
 * of the bench's, answering /health before it is handed on.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { open, readFile } from 'node:fs/promises'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { freePort } from '../src/net/free-port.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
/** How long the service may take to answer /health: its migrations run first. */
const START_TIMEOUT_MS = 30 * 60_000

export interface ServiceOptions {
  /** The arguments after `start`, e.g. `--no-worker` for the API alone. */
  startArgs?: string[]
  /** Settings of the service's environment beyond the bench's own. */
  env?: Record<string, string>
}

/**
 * `mailroom start` on `dataDir` as `npm start` runs it (the executable, with the Node flags of its
 * first line), logging (at info unless BENCH_LOG_LEVEL says) to `logFile`.
 */
export async function startService(dataDir: string, logFile: string, options: ServiceOptions = {}) {
  const port = await freePort()
  const startArgs = options.startArgs ?? []
  const bin = path.join(ROOT, 'bin', 'mailroom.js')
  // e.g. BENCH_SERVICE_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/profile": where the service's
  // time goes. Node refuses some flags (--cpu-prof among them) in NODE_OPTIONS, so with any the
  // service is started by node itself, given the flags of the executable's first line too.
  const nodeArgs = process.env.BENCH_SERVICE_NODE_ARGS?.split(/\s+/).filter(Boolean) ?? []
  const [command, args] = nodeArgs.length
    ? [process.execPath, [...(await firstLineNodeFlags(bin)), ...nodeArgs, bin, 'start', ...startArgs]]
    : [bin, ['start', ...startArgs]]
  const log = await open(logFile, 'w')
  const child: ChildProcess = spawn(command, args, {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      MAILROOM_DATA_DIR: dataDir,
      MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS: '1',
      MAILROOM_ALLOW_PRIVATE_WEBHOOK_URLS: '1',
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
      DATABASE_URL: '',
      MAILROOM_SECRET: '',
      ...options.env,
    },
    // The log goes straight to its file: relayed through a pipe, every line would wake this
    // process (the load and the sink) to copy it.
    stdio: ['ignore', 'ignore', log.fd],
  })
  await log.close()
  // A service that dies mid-run says so at once; stop() must not wait for an exit already gone.
  let stopping = false
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      if (stopping) return resolve()
      const where = process.env.BENCH_SERVICE_LOG
        ? `its log: ${logFile}`
        : 'BENCH_SERVICE_LOG=<file> keeps its log past the run'
      console.error(`The service exited during the run (${signal ?? code}); ${where}`)
      resolve()
    }),
  )
  const url = `http://127.0.0.1:${port}`
  // A new migration on a filled database (an index over 10 million records) takes minutes.
  const deadline = performance.now() + START_TIMEOUT_MS
  for (;;) {
    if (child.exitCode !== null) throw new Error('the service exited before it answered /health')
    const up = await fetch(`${url}/health`).then(
      (r) => r.ok,
      () => false,
    )
    if (up) break
    if (performance.now() > deadline) throw new Error('the service did not start')
    await sleep(100)
  }
  return {
    url,
    pid: child.pid as number,
    async stop() {
      stopping = true
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      await exited
    },
  }
}

/** The Node flags on an executable's first line: `#!/usr/bin/env -S node <flags>`. */
async function firstLineNodeFlags(file: string): Promise<string[]> {
  const [first = ''] = (await readFile(file, 'utf8')).split('\n', 1)
  return first
    .replace(/^#!.*?\bnode\b/, '')
    .split(/\s+/)
    .filter(Boolean)
}
