import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { readdir } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { registerCommands } from '../src/cli/commands.ts'
import { type CliIo, runCli } from '../src/cli/program.ts'
import { connect } from '../src/db/sql.ts'
import { createApp } from '../src/http/app.ts'
import { authenticate } from '../src/keys/keys.ts'
import type { Services } from '../src/services.ts'
import { openTestServices } from './support/app.ts'
import { createTestDatabase, type TestDatabase } from './support/database.ts'
import { expectAbout, TIMESTAMP } from './support/matchers.ts'
import { type SmtpSink, startSmtpSink } from './support/smtp-sink.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const SECRET = `cli-test-secret-${randomBytes(16).toString('hex')}`
/** A run of the real binary costs about a second. */
const SLOW = 60_000

interface Run {
  code: number
  stdout: string
  stderr: string
}

let db: TestDatabase
let services: Services
let sink587: SmtpSink
let sink465: SmtpSink

beforeAll(async () => {
  ;[db, sink587, sink465] = await Promise.all([
    createTestDatabase(),
    startSmtpSink({ port: 587, username: 'cli-sender@example.com' }),
    startSmtpSink({ port: 465 }),
  ])
  services = await openTestServices(db.url)
})

afterAll(async () => {
  await services?.close()
  await Promise.all([db?.drop(), sink587?.close(), sink465?.close()])
})

/**
 * The operator command run in this process, as the binary runs it (same parsing, output and
 * exit codes), on services opened once on the test database. `open` replaces that opening.
 */
async function mailroom(
  args: string[],
  options: { input?: string; open?: CliIo['open'] } = {},
): Promise<Run> {
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
      stdin: async () => options.input ?? '',
      open: options.open ?? (async () => ({ services, close: async () => {} })),
    },
    registerCommands,
  )
  return run
}

function environment(overrides: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: db.url,
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
function mailroomProcess(
  args: string[],
  options: { input?: string; env?: Record<string, string | undefined> } = {},
): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ['bin/mailroom.js', ...args],
      { cwd: ROOT, env: environment(options.env), timeout: SLOW },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0
        resolve({ code, stdout, stderr })
      },
    )
    child.stdin?.end(options.input ?? '')
  })
}

/** Runs the commands at the same time. */
function mailroomAll<const T extends string[][]>(...commands: T): Promise<{ [K in keyof T]: Run }> {
  return Promise.all(commands.map((args) => mailroom(args))) as Promise<{ [K in keyof T]: Run }>
}

/** A success: exit 0 and exactly one JSON document on stdout. */
function ok<T = Record<string, unknown>>(run: Run): T {
  expect(run, `stderr: ${run.stderr}`).toMatchObject({ code: 0 })
  expect(run.stdout.trim()).not.toBe('')
  return JSON.parse(run.stdout) as T
}

/** A failure: non-zero exit, nothing on stdout, one line on stderr. Returns that line. */
function failed(run: Run, code?: number): string {
  expect(run.code).not.toBe(0)
  if (code !== undefined) expect(run.code).toBe(code)
  expect(run.stdout).toBe('')
  const text = run.stderr.replace(/\n$/, '')
  expect(text.trim()).not.toBe('')
  expect(text.split('\n')).toHaveLength(1)
  return text
}

interface AccountOut {
  id: number
  email: string
  plan: string
  created_at: string
}
interface ConnectionOut {
  id: number
  account_id: number
  from: string
  host: string
  port: number
  quota: number | null
  quota_period: string | null
  rate: number
  is_default: boolean
  status: string
}
interface KeyOut {
  id: number
  name: string
  key: string
  connection_id: number | null
  expires_at: string | null
  status?: string
}

describe('mailroom operator command', () => {
  let free: AccountOut
  let pro: AccountOut
  let first: ConnectionOut
  let second: ConnectionOut
  let scopedKey: KeyOut
  let plainKey: KeyOut
  let rotatedSecret: string

  it(
    'account create: Free by default, Pro with --plan pro',
    async () => {
      const [a, b] = await mailroomAll(
        ['account', 'create', '--email', 'free-owner@example.com'],
        ['account', 'create', '--email', 'pro-owner@example.com', '--plan', 'pro'],
      )
      free = ok<AccountOut>(a)
      pro = ok<AccountOut>(b)
      expect(free).toMatchObject({ id: expect.any(Number), email: 'free-owner@example.com', plan: 'free' })
      expect(pro).toMatchObject({ id: expect.any(Number), email: 'pro-owner@example.com', plan: 'pro' })
      expect(Number.isInteger(free.id) && Number.isInteger(pro.id)).toBe(true)
      expect(free.created_at).toMatch(TIMESTAMP)
    },
    SLOW,
  )

  it(
    'account set-plan and account list',
    async () => {
      // The plan of the first account plays no part in what follows.
      const upgraded = ok<AccountOut>(await mailroom(['account', 'set-plan', String(free.id), 'pro']))
      expect(upgraded).toMatchObject({ id: free.id, email: free.email, plan: 'pro' })
      const accounts = ok<AccountOut[]>(await mailroom(['account', 'list']))
      expect(Array.isArray(accounts)).toBe(true)
      const expected = [
        [free.id, 'free-owner@example.com', 'pro'],
        [pro.id, 'pro-owner@example.com', 'pro'],
      ].sort((x, y) => Number(x[0]) - Number(y[0]))
      expect(accounts.map((a) => [a.id, a.email, a.plan])).toEqual(expected)
    },
    SLOW,
  )

  it(
    'connection add with --password: tests the login, saves, --from defaults to the username',
    async () => {
      const attempts = sink587.authAttempts
      first = ok<ConnectionOut>(
        await mailroom([
          'connection',
          'add',
          '--account',
          String(pro.id),
          '--host',
          sink587.host,
          '--port',
          '587',
          '--username',
          sink587.username,
          '--password',
          sink587.password,
        ]),
      )
      expect(sink587.authAttempts).toBe(attempts + 1)
      expect(first).toMatchObject({
        id: expect.any(Number),
        account_id: pro.id,
        from: 'cli-sender@example.com',
        host: sink587.host,
        port: 587,
        quota: null,
        quota_period: null,
        rate: 60,
        is_default: true,
        status: 'active',
      })
      expect(JSON.stringify(first)).not.toContain(sink587.password)
    },
    SLOW,
  )

  it(
    "connection add with --password-stdin, quota and rate; a failing login exits non-zero with the server's reason",
    async () => {
      const [added, wrong] = await Promise.all([
        mailroom(
          [
            'connection',
            'add',
            '--account',
            String(pro.id),
            '--host',
            sink465.host,
            '--port',
            '465',
            '--username',
            sink465.username,
            '--password-stdin',
            '--from',
            'cli-news@example.com',
            '--quota',
            '100',
            '--per',
            'day',
            '--rate',
            '120',
          ],
          { input: `${sink465.password}\n` },
        ),
        mailroom(
          [
            'connection',
            'add',
            '--account',
            String(free.id),
            '--host',
            sink587.host,
            '--port',
            '587',
            '--username',
            sink587.username,
            '--password-stdin',
          ],
          { input: 'wrong-password\n' },
        ),
      ])
      second = ok<ConnectionOut>(added)
      expect(second).toMatchObject({
        account_id: pro.id,
        from: 'cli-news@example.com',
        host: sink465.host,
        port: 465,
        quota: 100,
        quota_period: 'day',
        rate: 120,
        is_default: false,
        status: 'active',
      })
      const reason = failed(wrong)
      expect(reason).toContain('535')
      expect(reason).toContain('Authentication credentials invalid')
      expect(reason).not.toContain('wrong-password')
      // Nothing was saved for the failed login.
      expect(await db.sql`select id from connections where account_id = ${free.id}`).toHaveLength(0)
    },
    SLOW,
  )

  it(
    'connection list',
    async () => {
      const list = ok<ConnectionOut[]>(await mailroom(['connection', 'list', '--account', String(pro.id)]))
      expect(list).toHaveLength(2)
      expect(list[0]).toMatchObject({ id: first.id, from: first.from, is_default: true, status: 'active' })
      expect(list[1]).toMatchObject({ id: second.id, from: second.from, is_default: false, status: 'active' })
      expect(JSON.stringify(list)).not.toContain(sink587.password)
      expect(JSON.stringify(list)).not.toContain(sink465.password)
    },
    SLOW,
  )

  it(
    'connection update: quota, rate and a password read from stdin and tested first',
    async () => {
      const attempts = sink465.authAttempts
      const updated = ok<ConnectionOut>(
        await mailroom(
          [
            'connection',
            'update',
            String(second.id),
            '--quota',
            '50',
            '--per',
            'hour',
            '--rate',
            '30',
            '--password-stdin',
          ],
          { input: sink465.password },
        ),
      )
      expect(sink465.authAttempts).toBe(attempts + 1)
      expect(updated).toMatchObject({
        id: second.id,
        quota: 50,
        quota_period: 'hour',
        rate: 30,
        status: 'active',
      })
      const unlimited = ok<ConnectionOut>(
        await mailroom(['connection', 'update', String(second.id), '--no-quota']),
      )
      expect(unlimited).toMatchObject({ id: second.id, quota: null, quota_period: null, rate: 30 })
    },
    SLOW,
  )

  it(
    'connection disable/enable and pause (with and without --minutes)/resume',
    async () => {
      const [disabled, pausedForever] = await mailroomAll(
        ['connection', 'disable', String(second.id)],
        ['connection', 'pause', String(first.id)],
      )
      expect(ok<ConnectionOut>(disabled)).toMatchObject({ id: second.id, status: 'disabled' })
      expect(ok<ConnectionOut>(pausedForever)).toMatchObject({ id: first.id, status: 'paused' })

      const [enabled, resumed] = await mailroomAll(
        ['connection', 'enable', String(second.id)],
        ['connection', 'resume', String(first.id)],
      )
      expect(ok<ConnectionOut>(enabled)).toMatchObject({ id: second.id, status: 'active' })
      expect(ok<ConnectionOut>(resumed)).toMatchObject({ id: first.id, status: 'active' })

      const pausedTimed = ok<ConnectionOut & { paused_until: string }>(
        await mailroom(['connection', 'pause', String(second.id), '--minutes', '15']),
      )
      expect(pausedTimed).toMatchObject({ id: second.id, status: 'paused' })
      const until = Date.parse(`${pausedTimed.paused_until.replace(' ', 'T')}Z`)
      expect(Math.abs(until - (Date.now() + 15 * 60 * 1000))).toBeLessThan(5 * 60 * 1000)
    },
    SLOW,
  )

  it(
    'key create (with --connection and --expires-in-days, and without) and key list without secrets',
    async () => {
      const [scoped, plain] = await mailroomAll(
        [
          'key',
          'create',
          '--account',
          String(pro.id),
          '--name',
          'deploys',
          '--connection',
          String(second.id),
          '--expires-in-days',
          '30',
        ],
        ['key', 'create', '--account', String(pro.id), '--name', 'everything'],
      )
      scopedKey = ok<KeyOut>(scoped)
      plainKey = ok<KeyOut>(plain)
      for (const key of [scopedKey, plainKey]) {
        expect(Object.keys(key).sort()).toEqual(['connection_id', 'expires_at', 'id', 'key', 'name'])
      }
      expect(scopedKey).toMatchObject({ name: 'deploys', connection_id: second.id })
      expectAbout(scopedKey.expires_at, Date.now() + 30 * 24 * 3600 * 1000)
      expect(plainKey).toMatchObject({ name: 'everything', connection_id: null, expires_at: null })

      const listRun = await mailroom(['key', 'list', '--account', String(pro.id)])
      const list = ok<KeyOut[]>(listRun)
      expect(
        list.map((k) => [k.id, k.name, k.connection_id]).sort((a, b) => Number(a[0]) - Number(b[0])),
      ).toEqual(
        [
          [scopedKey.id, 'deploys', second.id],
          [plainKey.id, 'everything', null],
        ].sort((a, b) => Number(a[0]) - Number(b[0])),
      )
      expect(listRun.stdout).not.toContain(scopedKey.key)
      expect(listRun.stdout).not.toContain(plainKey.key)
      for (const key of list) expect(key).not.toHaveProperty('key')
    },
    SLOW,
  )

  it(
    'key rotate, scope (--connection / --all) and revoke',
    async () => {
      const [rotatedRun, scopedRun] = await mailroomAll(
        ['key', 'rotate', String(scopedKey.id)],
        ['key', 'scope', String(plainKey.id), '--connection', String(first.id)],
      )
      const rotated = ok<{ id: number; key: string }>(rotatedRun)
      expect(Object.keys(rotated).sort()).toEqual(['id', 'key'])
      expect(rotated.id).toBe(scopedKey.id)
      expect(rotated.key).not.toBe(scopedKey.key)
      rotatedSecret = rotated.key
      expect(await authenticate(db.sql, scopedKey.key)).toBeUndefined()
      expect(await authenticate(db.sql, rotated.key)).toMatchObject({ keyId: scopedKey.id })
      expect(ok<KeyOut>(scopedRun)).toMatchObject({ id: plainKey.id, connection_id: first.id })

      const [allRun, revokedRun] = await mailroomAll(
        ['key', 'scope', String(scopedKey.id), '--all'],
        ['key', 'revoke', String(plainKey.id)],
      )
      expect(ok<KeyOut>(allRun)).toMatchObject({ id: scopedKey.id, connection_id: null })
      expect(ok<KeyOut>(revokedRun)).toMatchObject({ id: plainKey.id, status: 'revoked' })
      expect(await authenticate(db.sql, plainKey.key)).toBeUndefined()
      expect(await authenticate(db.sql, rotated.key)).toMatchObject({
        keyId: scopedKey.id,
        connectionId: null,
      })
    },
    SLOW,
  )

  it(
    'outbox list: [] for a new account; newest first, cut by --limit',
    async () => {
      // Three real sends through the API, on the database the command works on.
      const app = createApp(services)
      const outboxIds: number[] = []
      for (let i = 1; i <= 3; i++) {
        const response = await app.request('/v1/send', {
          method: 'POST',
          headers: { authorization: `Bearer ${rotatedSecret}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            from: first.from,
            to: `reader${i}@example.com`,
            subject: `Hello ${i}`,
            text_body: 'Hi',
          }),
        })
        const body = (await response.json()) as { outboxId: number }
        expect(response.status, JSON.stringify(body)).toBe(200)
        outboxIds.push(body.outboxId)
      }

      const [empty, limited] = await mailroomAll(
        ['outbox', 'list', '--account', String(free.id)],
        ['outbox', 'list', '--account', String(pro.id), '--limit', '2'],
      )
      expect(ok(empty)).toEqual([])
      const newest = ok<{ id: number; from: string; to: string[]; subject: string }[]>(limited)
      expect(newest.map((r) => r.id)).toEqual([outboxIds[2], outboxIds[1]])
      expect(newest[0]).toMatchObject({ from: first.from, to: ['reader3@example.com'], subject: 'Hello 3' })
    },
    SLOW,
  )

  it(
    'connection delete: the oldest remaining connection becomes the default',
    async () => {
      const deleted = ok(await mailroom(['connection', 'delete', String(first.id)]))
      expect(deleted).toEqual({ deleted: true, new_default_id: second.id })
      const rows = await db.sql<{ id: number; is_default: boolean }[]>`
        select id, is_default from connections where account_id = ${pro.id} order by id`
      expect(rows.map((c) => [c.id, c.is_default])).toEqual([[second.id, true]])
    },
    SLOW,
  )
})

describe('mailroom migrate', () => {
  it('applies every migration to an empty database, then none', async () => {
    const admin = connect(inject('database').serverUrl, 1)
    const name = `mailroom_cli_empty_${randomBytes(5).toString('hex')}`
    await admin.unsafe(`create database ${name}`)
    try {
      const url = new URL(inject('database').serverUrl)
      url.pathname = `/${name}`
      const files = (await readdir(new URL('../src/db/migrations/', import.meta.url)))
        .filter((f) => f.endsWith('.sql'))
        .sort()
      expect(files.length).toBeGreaterThan(0)
      const open = async () => {
        const opened = await openTestServices(url.toString())
        return { services: opened, close: () => opened.close() }
      }
      expect(ok(await mailroom(['migrate'], { open }))).toEqual({ migrated: true, applied: files })
      expect(ok(await mailroom(['migrate'], { open }))).toEqual({ migrated: true, applied: [] })
      // The background worker's own schema is installed too, so workers start on a ready database.
      const probe = connect(url.toString(), 1)
      try {
        const [schema] = await probe`select 1 as present from pg_namespace where nspname = 'graphile_worker'`
        expect(schema).toEqual({ present: 1 })
      } finally {
        await probe.end()
      }
    } finally {
      await admin.unsafe(`drop database if exists ${name} with (force)`)
      await admin.end()
    }
  })
})

/** An `open` that fails the test: the command line should have been refused before it. */
const mustNotOpen: CliIo['open'] = () => {
  throw new Error('the command opened the database')
}

describe('mailroom --help, --version and usage errors', () => {
  it.each([
    [['--help'], 'Usage: mailroom [options] [command]'],
    [['-h'], 'Usage: mailroom [options] [command]'],
    [['help'], 'Usage: mailroom [options] [command]'],
    [['account', '--help'], 'Usage: mailroom account [options] [command]'],
    [['help', 'connection'], 'Usage: mailroom connection [options] [command]'],
    [
      ['connection', 'add', '-h'],
      'Usage: mailroom connection add --account <id> --host <host> --port <port>',
    ],
    [['migrate', '--help'], 'Usage: mailroom migrate'],
    [['start', '--help'], 'Usage: mailroom start [--no-worker] [--worker-only]'],
  ])('%j prints usage on stdout and exits 0, opening nothing', async (args, usage) => {
    const run = await mailroom(args, { open: mustNotOpen })
    expect(run).toMatchObject({ code: 0, stderr: '' })
    expect(run.stdout).toContain(usage)
  })

  it('lists every command of the operator interface', async () => {
    const help = async (...args: string[]) => (await mailroom([...args, '--help'])).stdout
    const top = await help()
    for (const group of ['start', 'migrate', 'account', 'connection', 'key', 'outbox', 'batch']) {
      expect(top).toMatch(new RegExp(`^  ${group}\\b`, 'm'))
    }
    const commands: Record<string, string[]> = {
      account: ['create', 'set-plan', 'list'],
      connection: ['add', 'list', 'update', 'disable', 'enable', 'pause', 'resume', 'delete'],
      key: ['create', 'list', 'rotate', 'revoke', 'scope'],
      outbox: ['list'],
      batch: ['failures', 'retry'],
    }
    for (const [group, verbs] of Object.entries(commands)) {
      const text = await help(group)
      for (const verb of verbs) expect(text).toMatch(new RegExp(`^  ${verb}\\b`, 'm'))
    }
  })

  it('--version prints the package version', async () => {
    const run = await mailroom(['--version'], { open: mustNotOpen })
    expect(run).toMatchObject({ code: 0, stdout: '1.0.0\n', stderr: '' })
  })

  it.each([
    [['account', 'explode'], /unknown command 'explode'.*usage: mailroom account/],
    [
      ['account', 'create', '--email', 'x@example.com', '--colour', 'blue'],
      /unknown option '--colour'.*usage: mailroom account create --email <addr>/,
    ],
    [['key', 'create', '--account'], /'--account <id>' argument missing.*usage: mailroom key create/],
    [['account', 'list', 'extra'], /too many arguments.*usage: mailroom account list/],
    [['migrate', 'now'], /too many arguments.*usage: mailroom migrate/],
    [['connection', 'pause', '1', '2'], /too many arguments.*usage: mailroom connection pause <id>/],
    [['account', 'set-plan', 'abc', 'pro'], /'abc' is invalid for argument 'account-id'.*whole number/],
    [['account', 'create', '--email', 'x@example.com', '--plan', 'gold'], /'gold' is invalid.*free, pro/],
    [['outbox', 'list', '--account', '1', '--limit', '0'], /--limit.*at least 1/],
    [['key', 'scope', '1'], /give --connection <id> or --all.*usage: mailroom key scope <key-id>/],
    [['key', 'scope', '1', '--connection', '2', '--all'], /cannot be used with/],
    [['connection', 'update', '1', '--quota', '5'], /--quota and --per go together/],
    [['connection', 'update', '1', '--no-quota', '--per', 'day'], /--no-quota takes no --per/],
    [['account', 'set-plan', '1', 'gold'], /'gold' is invalid.*free, pro.*usage: mailroom account set-plan/],
    [['account', 'set-plan', '2147483648', 'pro'], /whole number up to 2147483647/],
    [['connection', 'list', '--account', '99999999999999999999'], /whole number up to 2147483647/],
    [['connection', 'pause', '1', '--minutes', '9999999999999'], /whole number up to 2147483647/],
    [['start', '--no-worker', '--worker-only'], /--worker-only' cannot be used with option '--no-worker'/],
  ])('refuses %j with exit 2 and one line with the usage, creating nothing', async (args, reason) => {
    const run = await mailroom(args)
    expect(failed(run, 2)).toMatch(reason)
    expect(await db.sql`select id from accounts where email = 'x@example.com'`).toHaveLength(0)
  })

  it("prints a group's help on stderr and exits 2 when its command is missing", async () => {
    const run = await mailroom(['connection'], { open: mustNotOpen })
    expect(run.code).toBe(2)
    expect(run.stdout).toBe('')
    expect(run.stderr).toContain('Usage: mailroom connection')
  })

  it("a refusal of the work exits 1 with the catalog's message", async () => {
    expect(failed(await mailroom(['account', 'set-plan', '999999', 'pro']), 1)).toBe(
      'mailroom: no account with id 999999',
    )
  })

  it('refuses an empty password from standard input as a usage error, before any login is tried', async () => {
    for (const input of ['', '\n']) {
      const run = await mailroom(
        [
          'connection',
          'add',
          '--account',
          '1',
          '--host',
          'smtp.example.com',
          '--port',
          '587',
          '--username',
          'u@example.com',
          '--password-stdin',
        ],
        { input },
      )
      expect(failed(run, 2)).toMatch(
        /--password-stdin read an empty password.*usage: mailroom connection add/,
      )
    }
  })

  it.each([['connection'], ['key'], ['outbox'], ['form']])(
    '%s list for an account that does not exist exits 1, not with an empty list',
    async (group) => {
      expect(failed(await mailroom([group, 'list', '--account', '999999']), 1)).toBe(
        'mailroom: no account with id 999999',
      )
    },
  )
})

describe('mailroom as a process', () => {
  it(
    'prints help on stdout and exits 0; refuses a bad option with exit 2 and one line on stderr',
    async () => {
      const [help, bad] = await Promise.all([
        mailroomProcess(['--help']),
        mailroomProcess(['account', 'list', '--colour', 'blue']),
      ])
      expect(help).toMatchObject({ code: 0, stderr: '' })
      expect(help.stdout).toContain('Usage: mailroom')
      expect(failed(bad, 2)).toMatch(/unknown option '--colour'/)
    },
    SLOW,
  )

  it(
    "reads a password from standard input; a refused login exits 1 with the server's reason",
    async () => {
      const [account] = await db.sql<{ id: number }[]>`
        insert into accounts (email, plan) values ('stdin-owner@example.com', 'pro') returning id`
      const args = (input: string) =>
        mailroomProcess(
          [
            'connection',
            'add',
            '--account',
            String(account?.id),
            '--host',
            sink587.host,
            '--port',
            '587',
            '--username',
            sink587.username,
            '--password-stdin',
          ],
          { input },
        )
      // One after the other: once the right one is saved, the same login is refused as a duplicate.
      const wrong = await args('wrong-password\n')
      const added = await args(`${sink587.password}\n`)
      expect(ok(added)).toMatchObject({ account_id: account?.id, from: sink587.username })
      const reason = failed(wrong, 1)
      expect(reason).toContain('535')
      expect(reason).not.toContain('wrong-password')
    },
    SLOW,
  )

  it(
    'refuses bad settings at start with one line naming each, before creating anything',
    async () => {
      const dataDir = path.join(os.tmpdir(), `mailroom-never-${randomBytes(4).toString('hex')}`)
      const run = await mailroomProcess(['start'], {
        env: { DATABASE_URL: undefined, MAILROOM_DATA_DIR: dataDir, PORT: '70000', LOG_LEVEL: 'verbose' },
      })
      const line = failed(run, 1)
      expect(line).toContain('PORT must be a whole number from 0 to 65535, not "70000"')
      expect(line).toContain('LOG_LEVEL must be one of')
      expect(existsSync(dataDir)).toBe(false)
    },
    SLOW,
  )

  it(
    'refuses to run with DATABASE_URL but no MAILROOM_SECRET, naming it',
    async () => {
      const reason = failed(
        await mailroomProcess(['account', 'list'], { env: { MAILROOM_SECRET: undefined } }),
        1,
      )
      expect(reason).toContain('MAILROOM_SECRET')
    },
    SLOW,
  )
})
