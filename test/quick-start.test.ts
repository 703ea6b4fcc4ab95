/**
 * The README's quick start, followed as written: its shell blocks are read from README.md and
 * pasted into bash, terminal by terminal, against the embedded PostgreSQL `npm start` makes and
 * the sink `npm run sink` starts, until the email is in the sink and the outbox says it was sent;
 * then the SMTP relay's example, pasted after it, delivers through the relay too.
 *
 * What differs from a newcomer's run, and only this: the commands run in a directory that
 * stands for the clone (its entries linked to this checkout's), `npm install` is skipped (the
 * checkout is installed), and the addresses the README names are swapped for free ones
 * (each swap must find its text, so an edit of the README cannot slip past): the HTTP port
 * through `PORT`, the sink's through `--host`, the relay's through `MAILROOM_SMTP_PORT`.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { chmod, mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { freePort } from '../src/net/free-port.ts'
import { PROJECT_ROOT } from '../src/project-root.ts'

/** What a clone holds that the commands use. */
const CLONE_ENTRIES = [
  'package.json',
  'bin',
  'dist',
  'src',
  'scripts',
  'test',
  'openapi',
  'sdk',
  'node_modules',
]
/** Commands that keep running: each block ending in one runs in a terminal of its own. */
const LONG_RUNNING = /(^|\s)npm (run sink|start)\s*$/
/** The settings a newcomer's shell does not have (the test run's own CA among them). */
const CLEARED = [
  'NODE_EXTRA_CA_CERTS',
  'MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS',
  'DATABASE_URL',
  'MAILROOM_SECRET',
  'MAILROOM_DATA_DIR',
  'MAILROOM_PUBLIC_URL',
  'PORT',
  'HOST',
  'LOG_LEVEL',
  'LOG_FORMAT',
]

let home: string
let clone: string
const terminals: ChildProcess[] = []

beforeAll(async () => {
  home = await mkdtemp(path.join(os.tmpdir(), 'mailroom-quick-start-'))
  // As root, PostgreSQL runs as the `postgres` user, which has to enter its data dir in here.
  await chmod(home, 0o755)
  clone = path.join(home, 'mailroom')
  await mkdir(clone)
  for (const entry of CLONE_ENTRIES) await symlink(path.join(PROJECT_ROOT, entry), path.join(clone, entry))
})

afterAll(async () => {
  // Mailroom first (it stops its PostgreSQL), then the sink.
  for (const terminal of terminals.reverse()) {
    if (terminal.exitCode !== null || terminal.signalCode !== null || terminal.pid === undefined) continue
    process.kill(-terminal.pid, 'SIGINT')
    await once(terminal, 'exit')
  }
  await rm(home, { recursive: true, force: true })
}, 120_000)

/** The README's shell blocks from the heading `from` to the heading `to`. */
async function shellBlocks(from: string, to: string): Promise<string[]> {
  const readme = await readFile(path.join(PROJECT_ROOT, 'README.md'), 'utf8')
  const start = readme.indexOf(from)
  const end = readme.indexOf(to, start)
  expect(start).toBeGreaterThan(-1)
  expect(end).toBeGreaterThan(start)
  const blocks = [...readme.slice(start, end).matchAll(/^( *)```sh\n([\s\S]*?)^\1```$/gm)]
  return blocks.map(([, indent = '', body = '']) =>
    body
      .split('\n')
      .map((line) => line.slice(indent.length))
      .join('\n'),
  )
}

/** Replaces `from` with `to` in `text`, failing when `from` is not there. */
function swap(text: string, from: string | RegExp, to: string): string {
  expect(text).toMatch(from)
  return text.replaceAll(from, to)
}

function shell(script: string, env: NodeJS.ProcessEnv): ChildProcess {
  // A process group of its own, as a terminal has: Ctrl-C (SIGINT) reaches npm and what it runs.
  return spawn('bash', ['-e', '-o', 'pipefail', '-c', script], {
    cwd: clone,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
}

function collect(child: ChildProcess): () => string {
  let text = ''
  child.stdout?.on('data', (chunk) => {
    text += chunk
  })
  child.stderr?.on('data', (chunk) => {
    text += chunk
  })
  return () => text
}

it('takes a clone to a delivered email, pasted as written', async () => {
  const port = await freePort()
  const sinkHost = `127.0.${10 + Math.floor(Math.random() * 240)}.${1 + Math.floor(Math.random() * 250)}`
  const env: NodeJS.ProcessEnv = { ...process.env, MAILROOM_DATA_DIR: path.join(home, 'data') }
  for (const name of CLEARED) delete env[name]

  // The quick start up to its real-provider part, then the relay's example, pasted after it.
  const blocks = await shellBlocks('## Quick start', '### With a real provider')
  const [smtpBlock = ''] = await shellBlocks('## Sending over SMTP', '## Configuration')
  const relayPort = await freePort()
  const [sinkBlock = '', serviceBlock = '', ...operatorBlocks] = blocks
  expect(sinkBlock).toMatch(/^npm install\n/)
  expect(sinkBlock).toMatch(LONG_RUNNING)
  expect(serviceBlock).toMatch(LONG_RUNNING)
  for (const block of operatorBlocks) expect(block).not.toMatch(LONG_RUNNING)
  // The sink's CA by an absolute path: a relative one breaks in a shell in another directory.
  const caPaths = [...blocks.join('\n').matchAll(/NODE_EXTRA_CA_CERTS=("?)([^\s"]+)\1/g)].map((m) => m[2])
  expect(caPaths).toHaveLength(2)
  for (const ca of caPaths) expect(ca).toMatch(/^(\$PWD\/|\/)/)
  const sinkScript = swap(
    sinkBlock.replace(/^npm install\n/, ''),
    /npm run sink$/gm,
    `npm run sink -- --host ${sinkHost}`,
  )
  const operatorScript = swap(
    swap(
      [...operatorBlocks, swap(smtpBlock, 'port: 2587', `port: ${relayPort}`)].join('\n'),
      '--host 127.0.0.1 --port 2525',
      `--host ${sinkHost} --port 2525`,
    ),
    '127.0.0.1:3000',
    `127.0.0.1:${port}`,
  )

  const sinkTerminal = shell(sinkScript, env)
  terminals.push(sinkTerminal)
  const sinkOutput = collect(sinkTerminal)
  await expect.poll(sinkOutput, { timeout: 60_000, interval: 200 }).toContain('SMTP sink on')

  const serviceTerminal = shell(serviceBlock, {
    ...env,
    PORT: String(port),
    MAILROOM_SMTP_PORT: String(relayPort),
  })
  terminals.push(serviceTerminal)
  const serviceOutput = collect(serviceTerminal)
  await expect
    .poll(
      () =>
        fetch(`http://127.0.0.1:${port}/health`).then(
          (r) => r.status,
          () => `not serving:\n${serviceOutput()}`,
        ),
      {
        timeout: 120_000,
        interval: 500,
      },
    )
    .toBe(200)

  const operator = shell(operatorScript, env)
  const operatorOutput = collect(operator)
  const [code] = await once(operator, 'exit')
  expect(code, operatorOutput()).toBe(0)
  expect(operatorOutput()).toMatch(/"success":\s*true/)
  expect(operatorOutput()).toMatch(/"status":\s*"sent"/)
  await expect
    .poll(sinkOutput, { timeout: 10_000, interval: 200 })
    .toMatch(/-> friend@example\.com {2}"Hello"/)
  expect(sinkOutput()).toMatch(/ {4}attached hello\.txt \(text\/plain, 20 bytes\)/)
  expect(operatorOutput()).toMatch(/^250 2\.0\.0 Queued as email \d+ /m)
  await expect
    .poll(sinkOutput, { timeout: 30_000, interval: 200 })
    .toMatch(/-> friend@example\.com {2}"Over SMTP"/)
}, 300_000)
