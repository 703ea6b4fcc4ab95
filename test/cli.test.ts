import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readdir } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { connect } from '../src/db/sql.ts'
import { startHttpServer } from '../src/http/server.ts'
import { authenticate } from '../src/keys/keys.ts'
import { createLogger } from '../src/log.ts'
import { openServices } from '../src/open-services.ts'
import { createTestDatabase, type TestDatabase } from './support/database.ts'
import { expectAbout, TIMESTAMP } from './support/matchers.ts'
import { type SmtpSink, startSmtpSink } from './support/smtp-sink.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const SECRET = `cli-test-secret-${randomBytes(16).toString('hex')}`
/** Several runs of the real binary share one test; each costs about a second. */
const SLOW = 60_000

interface Run {
  code: number
  stdout: string
  stderr: string
}

let db: TestDatabase
let sink587: SmtpSink
let sink465: SmtpSink

beforeAll(async () => {
  ;[db, sink587, sink465] = await Promise.all([
    createTestDatabase(),
    startSmtpSink({ port: 587, username: 'cli-sender@example.com' }),
    startSmtpSink({ port: 465 }),
  ])
})

afterAll(async () => {
  await Promise.all([db?.drop(), sink587?.close(), sink465?.close()])
})

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
function mailroom(
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

/** Runs the commands at the same time (each run of the binary costs about a second). */
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
      const services = await openServices(
        {
          port: 0,
          host: '127.0.0.1',
          databaseUrl: db.url,
          dataDir: '/nonexistent',
          secret: SECRET,
          allowPrivateSmtpHosts: true,
          logLevel: 'silent',
          bodyLimitBytes: 10 * 1024 * 1024,
          ehloName: 'mailroom.test',
          queueLifetimeHours: 72,
          publicUrl: 'http://127.0.0.1',
          trustProxy: false,
        },
        createLogger('silent'),
      )
      const server = await startHttpServer(services, 0, '127.0.0.1')
      const outboxIds: number[] = []
      try {
        for (let i = 1; i <= 3; i++) {
          const response = await fetch(`${server.url}/v1/send`, {
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
      } finally {
        await server.close()
        await services.close()
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
  it(
    'applies every migration to an empty database, then none',
    async () => {
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
        const firstRun = ok(await mailroom(['migrate'], { env: { DATABASE_URL: url.toString() } }))
        expect(firstRun).toEqual({ migrated: true, applied: files })
        const secondRun = ok(await mailroom(['migrate'], { env: { DATABASE_URL: url.toString() } }))
        expect(secondRun).toEqual({ migrated: true, applied: [] })
        // The background worker's own schema is installed too, so workers start on a ready database.
        const probe = connect(url.toString(), 1)
        try {
          const [schema] =
            await probe`select 1 as present from pg_namespace where nspname = 'graphile_worker'`
          expect(schema).toEqual({ present: 1 })
        } finally {
          await probe.end()
        }
      } finally {
        await admin.unsafe(`drop database if exists ${name} with (force)`)
        await admin.end()
      }
    },
    SLOW,
  )
})

describe('mailroom usage errors and configuration', () => {
  it(
    'refuses unknown commands and bad flags with exit 2 and one line',
    async () => {
      const runs = await mailroomAll(
        ['account', 'explode'],
        ['account', 'create', '--email', 'x@example.com', '--colour', 'blue'],
        ['key', 'create', '--account'],
      )
      const [unknownVerb, badFlag, missingValue] = runs.map((r) => failed(r, 2))
      expect(unknownVerb).toMatch(/explode/)
      expect(badFlag).toMatch(/colour/)
      expect(missingValue).toMatch(/account/)
      // Nothing was created by the refused command.
      expect(await db.sql`select id from accounts where email = 'x@example.com'`).toHaveLength(0)
    },
    SLOW,
  )

  it(
    'refuses to run with DATABASE_URL but no MAILROOM_SECRET, naming it',
    async () => {
      const reason = failed(await mailroom(['account', 'list'], { env: { MAILROOM_SECRET: undefined } }))
      expect(reason).toContain('MAILROOM_SECRET')
    },
    SLOW,
  )
})
