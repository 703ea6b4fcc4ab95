/**
 * `npm run sink`, the local SMTP server of the quick start, run as the script it is: it keeps its
 * CA across restarts (a running Mailroom trusts the CA it read at start), listens where
 * `--port`/`--host` say, and answers a taken address with one line and a failed exit.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import nodemailer from 'nodemailer'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { PROJECT_ROOT } from '../src/project-root.ts'

const SCRIPT = path.join(PROJECT_ROOT, 'scripts', 'dev-sink.ts')
const TSX = import.meta.resolve('tsx')
/** A loopback address of its own (127.0.0.x is the test sinks'), so the sink's ports are free. */
const HOST = `127.0.${10 + Math.floor(Math.random() * 240)}.${1 + Math.floor(Math.random() * 250)}`

/** Another port Mailroom accepts; binding one below 1024 takes root, so others stay on 2525. */
const OTHER_PORT = process.getuid?.() === 0 ? 587 : 2525

let cwd: string
const running = new Set<ChildProcess>()

beforeAll(async () => {
  cwd = await mkdtemp(path.join(os.tmpdir(), 'mailroom-dev-sink-'))
})

afterEach(async () => {
  for (const child of running) await stop(child)
})

afterAll(async () => {
  await rm(cwd, { recursive: true, force: true })
})

function run(args: string[]): { child: ChildProcess; output: () => string; errors: () => string } {
  const child = spawn(process.execPath, ['--import', TSX, SCRIPT, ...args], { cwd })
  running.add(child)
  let stdout = ''
  let stderr = ''
  child.stdout?.on('data', (chunk) => {
    stdout += chunk
  })
  child.stderr?.on('data', (chunk) => {
    stderr += chunk
  })
  return { child, output: () => stdout, errors: () => stderr }
}

/** Starts the sink and waits until it says where it listens. */
async function start(args: string[]): Promise<{ child: ChildProcess; output: () => string }> {
  const sink = run(args)
  await expect.poll(sink.output, { timeout: 20_000, interval: 100 }).toContain('Ctrl-C stops the sink')
  return sink
}

async function stop(child: ChildProcess): Promise<void> {
  running.delete(child)
  if (child.exitCode !== null || child.signalCode !== null) return
  child.kill('SIGTERM')
  await once(child, 'exit')
}

/** Logs in over TLS trusting only `ca`, as a Mailroom started with NODE_EXTRA_CA_CERTS does. */
async function logIn(port: number, ca: string): Promise<true> {
  const transport = nodemailer.createTransport({
    host: HOST,
    port,
    secure: port === 465,
    requireTLS: true,
    auth: { user: 'dev@example.com', pass: 'dev-password' },
    tls: { ca: [ca], servername: HOST },
  })
  try {
    return await transport.verify()
  } finally {
    transport.close()
  }
}

describe('npm run sink', () => {
  it('keeps its CA across restarts: what trusted the first start trusts the next', async () => {
    const first = await start(['--host', HOST])
    const ca = await readFile(path.join(cwd, '.mailroom-sink', 'ca.pem'), 'utf8')
    // The setting it prints holds wherever the shell is: the CA's absolute path.
    expect(first.output()).toContain(
      `export NODE_EXTRA_CA_CERTS=${path.join(cwd, '.mailroom-sink', 'ca.pem')} MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS=1`,
    )
    expect(await logIn(2525, ca)).toBe(true)
    await stop(first.child)

    await start(['--host', HOST, '--port', String(OTHER_PORT)])
    expect(await readFile(path.join(cwd, '.mailroom-sink', 'ca.pem'), 'utf8')).toBe(ca)
    expect(await logIn(OTHER_PORT, ca)).toBe(true)
  }, 60_000)

  it('says in one line that its address is taken, and exits 1', async () => {
    const taken = net.createServer()
    await new Promise<void>((resolve) => taken.listen(2525, HOST, resolve))
    try {
      const sink = run(['--host', HOST])
      const [code] = await once(sink.child, 'exit')
      expect(code).toBe(1)
      expect(sink.errors().trimEnd().split('\n')).toEqual([
        expect.stringMatching(
          new RegExp(`^npm run sink: .*${HOST.replaceAll('.', '\\.')}:2525.*in use.*--port`),
        ),
      ])
      expect(sink.output()).toBe('')
    } finally {
      taken.close()
    }
  }, 30_000)

  it('refuses a port Mailroom would not accept, in one line', async () => {
    const sink = run(['--port', '25', '--host', HOST])
    const [code] = await once(sink.child, 'exit')
    expect(code).toBe(2)
    expect(sink.errors().trimEnd().split('\n')).toEqual([
      'npm run sink: --port must be 2525, 587 or 465, the ports Mailroom accepts; not 25',
    ])
  }, 30_000)
})
