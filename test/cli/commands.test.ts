import { describe, expect, it } from 'vitest'
import { createApp } from '../../src/http/app.ts'
import { authenticate } from '../../src/keys/keys.ts'
import { failed, mailroom, mailroomAll, ok, SLOW, useCli } from '../support/cli.ts'
import { expectAbout, TIMESTAMP } from '../support/matchers.ts'

const cli = useCli()

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
        cli,
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
      const upgraded = ok<AccountOut>(await mailroom(cli, ['account', 'set-plan', String(free.id), 'pro']))
      expect(upgraded).toMatchObject({ id: free.id, email: free.email, plan: 'pro' })
      const accounts = ok<AccountOut[]>(await mailroom(cli, ['account', 'list']))
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
      const attempts = cli.sink587.authAttempts
      first = ok<ConnectionOut>(
        await mailroom(cli, [
          'connection',
          'add',
          '--account',
          String(pro.id),
          '--host',
          cli.sink587.host,
          '--port',
          '587',
          '--username',
          cli.sink587.username,
          '--password',
          cli.sink587.password,
        ]),
      )
      expect(cli.sink587.authAttempts).toBe(attempts + 1)
      expect(first).toMatchObject({
        id: expect.any(Number),
        account_id: pro.id,
        from: 'cli-sender@example.com',
        host: cli.sink587.host,
        port: 587,
        quota: null,
        quota_period: null,
        rate: 60,
        is_default: true,
        status: 'active',
      })
      expect(JSON.stringify(first)).not.toContain(cli.sink587.password)
    },
    SLOW,
  )

  it(
    "connection add with --password-stdin, quota and rate; a failing login exits non-zero with the server's reason",
    async () => {
      const [added, wrong] = await Promise.all([
        mailroom(
          cli,
          [
            'connection',
            'add',
            '--account',
            String(pro.id),
            '--host',
            cli.sink465.host,
            '--port',
            '465',
            '--username',
            cli.sink465.username,
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
          { input: `${cli.sink465.password}\n` },
        ),
        mailroom(
          cli,
          [
            'connection',
            'add',
            '--account',
            String(free.id),
            '--host',
            cli.sink587.host,
            '--port',
            '587',
            '--username',
            cli.sink587.username,
            '--password-stdin',
          ],
          { input: 'wrong-password\n' },
        ),
      ])
      second = ok<ConnectionOut>(added)
      expect(second).toMatchObject({
        account_id: pro.id,
        from: 'cli-news@example.com',
        host: cli.sink465.host,
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
      expect(await cli.db.sql`select id from connections where account_id = ${free.id}`).toHaveLength(0)
    },
    SLOW,
  )

  it(
    'connection list',
    async () => {
      const list = ok<ConnectionOut[]>(
        await mailroom(cli, ['connection', 'list', '--account', String(pro.id)]),
      )
      expect(list).toHaveLength(2)
      expect(list[0]).toMatchObject({ id: first.id, from: first.from, is_default: true, status: 'active' })
      expect(list[1]).toMatchObject({ id: second.id, from: second.from, is_default: false, status: 'active' })
      expect(JSON.stringify(list)).not.toContain(cli.sink587.password)
      expect(JSON.stringify(list)).not.toContain(cli.sink465.password)
    },
    SLOW,
  )

  it(
    'connection update: quota, rate and a password read from stdin and tested first',
    async () => {
      const attempts = cli.sink465.authAttempts
      const updated = ok<ConnectionOut>(
        await mailroom(
          cli,
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
          { input: cli.sink465.password },
        ),
      )
      expect(cli.sink465.authAttempts).toBe(attempts + 1)
      expect(updated).toMatchObject({
        id: second.id,
        quota: 50,
        quota_period: 'hour',
        rate: 30,
        status: 'active',
      })
      const unlimited = ok<ConnectionOut>(
        await mailroom(cli, ['connection', 'update', String(second.id), '--no-quota']),
      )
      expect(unlimited).toMatchObject({ id: second.id, quota: null, quota_period: null, rate: 30 })
    },
    SLOW,
  )

  it(
    'connection disable/enable and pause (with and without --minutes)/resume',
    async () => {
      const [disabled, pausedForever] = await mailroomAll(
        cli,
        ['connection', 'disable', String(second.id)],
        ['connection', 'pause', String(first.id)],
      )
      expect(ok<ConnectionOut>(disabled)).toMatchObject({ id: second.id, status: 'disabled' })
      expect(ok<ConnectionOut>(pausedForever)).toMatchObject({ id: first.id, status: 'paused' })

      const [enabled, resumed] = await mailroomAll(
        cli,
        ['connection', 'enable', String(second.id)],
        ['connection', 'resume', String(first.id)],
      )
      expect(ok<ConnectionOut>(enabled)).toMatchObject({ id: second.id, status: 'active' })
      expect(ok<ConnectionOut>(resumed)).toMatchObject({ id: first.id, status: 'active' })

      const pausedTimed = ok<ConnectionOut & { paused_until: string }>(
        await mailroom(cli, ['connection', 'pause', String(second.id), '--minutes', '15']),
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
        cli,
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

      const listRun = await mailroom(cli, ['key', 'list', '--account', String(pro.id)])
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
        cli,
        ['key', 'rotate', String(scopedKey.id)],
        ['key', 'scope', String(plainKey.id), '--connection', String(first.id)],
      )
      const rotated = ok<{ id: number; key: string }>(rotatedRun)
      expect(Object.keys(rotated).sort()).toEqual(['id', 'key'])
      expect(rotated.id).toBe(scopedKey.id)
      expect(rotated.key).not.toBe(scopedKey.key)
      rotatedSecret = rotated.key
      expect(await authenticate(cli.db.sql, scopedKey.key)).toBeUndefined()
      expect(await authenticate(cli.db.sql, rotated.key)).toMatchObject({ keyId: scopedKey.id })
      expect(ok<KeyOut>(scopedRun)).toMatchObject({ id: plainKey.id, connection_id: first.id })

      const [allRun, revokedRun] = await mailroomAll(
        cli,
        ['key', 'scope', String(scopedKey.id), '--all'],
        ['key', 'revoke', String(plainKey.id)],
      )
      expect(ok<KeyOut>(allRun)).toMatchObject({ id: scopedKey.id, connection_id: null })
      expect(ok<KeyOut>(revokedRun)).toMatchObject({ id: plainKey.id, status: 'revoked' })
      expect(await authenticate(cli.db.sql, plainKey.key)).toBeUndefined()
      expect(await authenticate(cli.db.sql, rotated.key)).toMatchObject({
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
      const app = createApp(cli.services)
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
        cli,
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
      const deleted = ok(await mailroom(cli, ['connection', 'delete', String(first.id)]))
      expect(deleted).toEqual({ deleted: true, new_default_id: second.id })
      const rows = await cli.db.sql<{ id: number; is_default: boolean }[]>`
        select id, is_default from connections where account_id = ${pro.id} order by id`
      expect(rows.map((c) => [c.id, c.is_default])).toEqual([[second.id, true]])
    },
    SLOW,
  )
})
