/**
 * The operator command's test fixture: a test database, SMTP sinks on 587 and 465, and the
 * command run in this process or as the binary.
 */
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, expect } from 'vitest'
import { registerCommands } from '../../src/cli/commands.ts'
import { type CliIo, runCli } from '../../src/cli/program.ts'
import type { Services } from '../../src/services.ts'
import { openTestServices } from './app.ts'
import { createTestDatabase, type TestDatabase } from './database.ts'
import { type SmtpSink, startSmtpSink } from './smtp-sink.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const SECRET = `cli-test-secret-${randomBytes(16).toString('hex')}`
/** A run of the real binary costs about a second. */
export const SLOW = 60_000

export interface Run {
  code: number
  stdout: string
  stderr: string
}

/** What the fixture started before the file's tests. */
export interface CliFixture {
  db: TestDatabase
  services: Services
  sink587: SmtpSink
  sink465: SmtpSink
}

/** Starts the database and sinks before the file's tests and closes them after. */
export function useCli(): CliFixture {
  const cli = {} as CliFixture
  beforeAll(async () => {
    ;[cli.db, cli.sink587, cli.sink465] = await Promise.all([
      createTestDatabase(),
      startSmtpSink({ port: 587, username: 'cli-sender@example.com' }),
      startSmtpSink({ port: 465 }),
    ])
    cli.services = await openTestServices(cli.db.url)
  })

  afterAll(async () => {
    await cli.services?.close()
    await Promise.all([cli.db?.drop(), cli.sink587?.close(), cli.sink465?.close()])
  })
  return cli
}

/**
 * The operator command run in this process, as the binary runs it (same parsing, output and
 * exit codes), on services opened once on the test database. `open` replaces that opening.
 */
export function mailroom(
  cli: CliFixture,
  args: string[],
  options: { input?: string; open?: CliIo['open'] } = {},
): Promise<Run> {
  return runCommand(
    args,
    options.open ?? (async () => ({ services: cli.services, close: async () => {} })),
    options.input,
  )
}

/** The operator command run in this process on the services `open` gives, reading `input`. */
export async function runCommand(args: string[], open: CliIo['open'], input = ''): Promise<Run> {
  const run: Run = { code: -1, stdout: '', stderr: '' }
  run.code = await runCli(
    args,
    {
      stdout: (text) => {
        run.stdout += text
      },
      stderr: (text) => {
        run.stderr += text
      },
      stdin: async () => input,
      open,
    },
    registerCommands,
  )
  return run
}

function environment(cli: CliFixture, overrides: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: cli.db.url,
    MAILROOM_SECRET: SECRET,
    MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS: '1',
  }
  for (const name of ['PORT', 'HOST', 'MAILROOM_DATA_DIR', 'LOG_LEVEL']) delete env[name]
  for (const [name, value] of Object.entries(overrides)) {
    if (value === undefined) delete env[name]
    else env[name] = value
  }
  return env
}

/** Runs `node bin/mailroom.js ...args` from the project root, as an operator would. */
export function mailroomProcess(
  cli: CliFixture,
  args: string[],
  options: { input?: string; env?: Record<string, string | undefined> } = {},
): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ['bin/mailroom.js', ...args],
      { cwd: ROOT, env: environment(cli, options.env), timeout: SLOW },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0
        resolve({ code, stdout, stderr })
      },
    )
    child.stdin?.end(options.input ?? '')
  })
}

/** Runs the commands at the same time. */
export function mailroomAll<const T extends string[][]>(
  cli: CliFixture,
  ...commands: T
): Promise<{ [K in keyof T]: Run }> {
  return Promise.all(commands.map((args) => mailroom(cli, args))) as Promise<{ [K in keyof T]: Run }>
}

/** A success: exit 0 and exactly one JSON document on stdout. */
export function ok<T = Record<string, unknown>>(run: Run): T {
  expect(run, `stderr: ${run.stderr}`).toMatchObject({ code: 0 })
  expect(run.stdout.trim()).not.toBe('')
  return JSON.parse(run.stdout) as T
}

/** A failure: non-zero exit, nothing on stdout, one line on stderr. Returns that line. */
export function failed(run: Run, code?: number): string {
  expect(run.code).not.toBe(0)
  if (code !== undefined) expect(run.code).toBe(code)
  expect(run.stdout).toBe('')
  const text = run.stderr.replace(/\n$/, '')
  expect(text.trim()).not.toBe('')
  expect(text.split('\n')).toHaveLength(1)
  return text
}
