import { beforeAll, describe, expect, it } from 'vitest'
import { type Account, createAccount } from '../../src/accounts/accounts.ts'
import {
  type AddConnectionInput,
  addConnection,
  type ConnectionView,
  deleteConnection,
  disableConnection,
  listConnections,
  pauseConnection,
  resumeConnection,
  updateConnection,
} from '../../src/connections/connections.ts'
import { openPassword, SecretBoxError } from '../../src/smtp/secret-box.ts'
import { startTestApp, TEST_SECRET, useTestApp } from '../support/app.ts'
import { expectAbout } from '../support/matchers.ts'
import { refusal } from '../support/refusal.ts'
import type { SmtpSink } from '../support/smtp-sink.ts'

const app = useTestApp()
/** Implicit TLS; its username is an address. */
let tls465: SmtpSink
/** STARTTLS; its username is an address. */
let starttls587: SmtpSink
/** STARTTLS; its username is not an address. */
let starttls2525: SmtpSink
/** Port 587 without STARTTLS, which would take AUTH in clear text. */
let plain587: SmtpSink

beforeAll(async () => {
  ;[tls465, starttls587, starttls2525, plain587] = await Promise.all([
    app.sink({ port: 465, username: 'mailer@example.com' }),
    app.sink({ port: 587, username: 'sender@example.com' }),
    app.sink({ port: 2525 }),
    app.sink({ port: 587, offerStartTls: false }),
  ])
})

let seq = 0

function account(plan: 'free' | 'pro' = 'pro'): Promise<Account> {
  return createAccount(app.services.sql, { email: `conn-owner${++seq}@example.com`, plan })
}

function fresh(): string {
  return `from${++seq}@example.com`
}

/** A connection on the 2525 sink with a from address of its own. */
function add(accountId: number, extra: Partial<AddConnectionInput> = {}): Promise<ConnectionView> {
  return addConnection(app.services, { accountId, ...starttls2525.login, from: fresh(), ...extra })
}

async function rowCount(accountId: number): Promise<number> {
  const [row] = await app.db.sql<{ n: number }[]>`
    select count(*)::int as n from connections where account_id = ${accountId}`
  return row?.n ?? -1
}

async function sealedPassword(id: number): Promise<string> {
  const [row] = await app.db.sql<{ password_encrypted: string }[]>`
    select password_encrypted from connections where id = ${id}`
  if (!row) throw new Error(`no connection ${id}`)
  return row.password_encrypted
}

describe('addConnection tests the SMTP login, then saves', () => {
  it.each([
    ['465 (implicit TLS)', () => tls465],
    ['587 (STARTTLS)', () => starttls587],
    ['2525 (STARTTLS)', () => starttls2525],
  ])('saves a connection on port %s and returns it', async (_name, sinkOf) => {
    const sink = sinkOf()
    const owner = await account('free')
    const from = fresh()
    const attemptsBefore = sink.authAttempts
    const saved = await addConnection(app.services, { accountId: owner.id, ...sink.login, from })
    expect(sink.authAttempts).toBe(attemptsBefore + 1)
    expect(saved).toMatchObject({
      id: expect.any(Number),
      account_id: owner.id,
      from,
      host: sink.host,
      port: sink.port,
      quota: null,
      quota_period: null,
      rate: 60,
      is_default: true,
      status: 'active',
    })
    expect(Number.isInteger(saved.id)).toBe(true)
    expect(JSON.stringify(saved)).not.toContain(sink.password)
    for (const field of Object.keys(saved)) expect(field).not.toMatch(/password/)
    expect(await listConnections(app.services.sql, owner.id)).toEqual([saved])
  })

  it("refuses a wrong password with the server's reason, and saves nothing", async () => {
    const owner = await account()
    const attemptsBefore = starttls587.authAttempts
    const error = await refusal(
      addConnection(app.services, {
        accountId: owner.id,
        ...starttls587.login,
        password: 'not-the-password',
        from: fresh(),
      }),
    )
    expect(starttls587.authAttempts).toBe(attemptsBefore + 1)
    expect(error.code).toBe('SMTP_LOGIN_FAILED')
    expect(error.message).toContain('535')
    expect(error.message).toContain('Authentication credentials invalid')
    expect(error.message).not.toContain('not-the-password')
    expect(error.message).not.toContain('\n')
    expect(await rowCount(owner.id)).toBe(0)
  })

  it.each([25, 2526, 0, 466])('refuses port %s before connecting anywhere', async (port) => {
    const owner = await account()
    const before = { connections: starttls2525.connections, auth: starttls2525.authAttempts }
    const error = await refusal(
      addConnection(app.services, { accountId: owner.id, ...starttls2525.login, port, from: fresh() }),
    )
    expect(error.code).toBe('INVALID_CONNECTION')
    expect(error.message).toMatch(/465/)
    expect(error.message).toMatch(/587/)
    expect(error.message).toMatch(/2525/)
    expect({ connections: starttls2525.connections, auth: starttls2525.authAttempts }).toEqual(before)
    expect(await rowCount(owner.id)).toBe(0)
  })

  it('refuses a 587 server that does not offer STARTTLS without ever sending the password', async () => {
    const owner = await account()
    const error = await refusal(
      addConnection(app.services, { accountId: owner.id, ...plain587.login, from: fresh() }),
    )
    expect(error.code).toBe('SMTP_LOGIN_FAILED')
    expect(plain587.connections).toBeGreaterThan(0)
    expect(plain587.authAttempts).toBe(0)
    expect(error.message).not.toContain(plain587.password)
    expect(await rowCount(owner.id)).toBe(0)
  })

  it('refuses a host on a private address unless private hosts are allowed', async () => {
    const strict = await startTestApp({ allowPrivateSmtpHosts: false })
    try {
      const owner = await createAccount(strict.services.sql, { email: 'strict@example.com', plan: 'pro' })
      const before = starttls587.connections
      const error = await refusal(
        addConnection(strict.services, { accountId: owner.id, ...starttls587.login, from: fresh() }),
      )
      expect(error.code).toBe('SMTP_LOGIN_FAILED')
      expect(error.message).toContain('MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS')
      expect(starttls587.connections).toBe(before)
      const [row] = await strict.db.sql<{ n: number }[]>`select count(*)::int as n from connections`
      expect(row?.n).toBe(0)
      // A name that resolves to loopback is refused just the same.
      const byName = await refusal(
        addConnection(strict.services, {
          accountId: owner.id,
          ...starttls587.login,
          host: 'localhost',
          from: fresh(),
        }),
      )
      expect(byName.code).toBe('SMTP_LOGIN_FAILED')
      expect(starttls587.connections).toBe(before)
    } finally {
      await strict.close()
    }
    // The main test app allows private hosts: the same login is accepted there.
    const owner = await account()
    const saved = await addConnection(app.services, {
      accountId: owner.id,
      ...starttls587.login,
      from: fresh(),
    })
    expect(saved.status).toBe('active')
  })
})

describe('the from address', () => {
  it('defaults to the username when that is an address', async () => {
    const owner = await account()
    const saved = await addConnection(app.services, { accountId: owner.id, ...starttls587.login })
    expect(saved.from).toBe('sender@example.com')
  })

  it('is required when the username is not an address, and nothing is saved without it', async () => {
    const owner = await account()
    const attemptsBefore = starttls2525.authAttempts
    const error = await refusal(addConnection(app.services, { accountId: owner.id, ...starttls2525.login }))
    expect(error.code).toBe('INVALID_CONNECTION')
    expect(error.message).toMatch(/from/)
    expect(starttls2525.authAttempts).toBe(attemptsBefore)
    expect(await rowCount(owner.id)).toBe(0)
    const saved = await addConnection(app.services, {
      accountId: owner.id,
      ...starttls2525.login,
      from: 'news@example.com',
    })
    expect(saved.from).toBe('news@example.com')
  })

  it('refuses a from the API would refuse, so that every connection can be named by its from', async () => {
    const owner = await account()
    for (const from of [
      'not an address',
      `${'a'.repeat(65)}@example.com`,
      '.news@example.com',
      'news@localhost',
    ]) {
      const error = await refusal(
        addConnection(app.services, { accountId: owner.id, ...starttls2525.login, from }),
      )
      expect(error.code).toBe('INVALID_CONNECTION')
    }
    expect(await rowCount(owner.id)).toBe(0)
    // A local part of 64, `=` in it: the longest the API takes, and a bounce address's shape.
    const longest = `${'a'.repeat(62)}=b@example.com`
    const saved = await addConnection(app.services, {
      accountId: owner.id,
      ...starttls2525.login,
      from: longest,
    })
    expect(saved.from).toBe(longest)
  })

  it('refuses a second connection for the same address, compared case-insensitively', async () => {
    const owner = await account()
    await add(owner.id, { from: 'Dup@Example.com' })
    for (const from of ['dup@example.com', 'DUP@EXAMPLE.COM', 'Dup@Example.com']) {
      const error = await refusal(add(owner.id, { from }))
      expect(error.code).toBe('CONNECTION_EXISTS')
      expect(error.message).toMatch(/dup@example\.com/i)
    }
    expect(await rowCount(owner.id)).toBe(1)
  })
})

describe('the password is encrypted at rest', () => {
  it('stores a value that does not contain the password and opens only with MAILROOM_SECRET', async () => {
    const owner = await account()
    const saved = await addConnection(app.services, {
      accountId: owner.id,
      ...tls465.login,
      from: fresh(),
    })
    const sealed = await sealedPassword(saved.id)
    expect(sealed).not.toContain(tls465.password)
    expect(sealed).not.toContain(Buffer.from(tls465.password).toString('base64'))
    expect(sealed).not.toContain(Buffer.from(tls465.password).toString('base64url'))
    expect(openPassword(TEST_SECRET, sealed)).toBe(tls465.password)
    expect(() => openPassword(`${TEST_SECRET}-but-another-one`, sealed)).toThrow(SecretBoxError)
    // The password is not in any other column either.
    const [row] = await app.db.sql<{ doc: string }[]>`
      select to_jsonb(c)::text as doc from connections c where id = ${saved.id}`
    expect(row?.doc).not.toContain(tls465.password)
  })
})

describe('quota', () => {
  it.each([
    [500, 'day'],
    [1, 'hour'],
    [1, 'day'],
  ] as const)('accepts %s per %s', async (quota, per) => {
    const owner = await account()
    const saved = await add(owner.id, { quota: { quota, per } })
    expect(saved).toMatchObject({ quota, quota_period: per })
    expect((await listConnections(app.services.sql, owner.id))[0]).toMatchObject({ quota, quota_period: per })
  })

  it('means no quota when omitted', async () => {
    const owner = await account()
    expect(await add(owner.id)).toMatchObject({ quota: null, quota_period: null })
  })

  it.each([
    [0, 'day'],
    [-1, 'day'],
    [-100, 'hour'],
    [1.5, 'day'],
    [100, 'week'],
    [100, 'minute'],
    [100, ''],
  ])('refuses %s per "%s" and saves nothing', async (quota, per) => {
    const owner = await account()
    const error = await refusal(add(owner.id, { quota: { quota, per } }))
    expect(error.code).toBe('INVALID_CONNECTION')
    expect(await rowCount(owner.id)).toBe(0)
  })
})

describe('rate (messages per minute, 1 to 60000, default 60)', () => {
  it.each([1, 6000, 6001, 60000, 60, 120])('accepts %s', async (rate) => {
    const owner = await account()
    expect(await add(owner.id, { rate })).toMatchObject({ rate })
  })

  it('is 60 when omitted', async () => {
    const owner = await account()
    expect(await add(owner.id)).toMatchObject({ rate: 60 })
  })

  it.each([0, -1, 60001, 1.5])('refuses %s and saves nothing', async (rate) => {
    const owner = await account()
    const error = await refusal(add(owner.id, { rate }))
    expect(error.code).toBe('INVALID_CONNECTION')
    expect(error.message).toContain('60000')
    expect(await rowCount(owner.id)).toBe(0)
  })
})

describe('default connection', () => {
  /** A Pro account and three connections added one after the other. */
  async function threeConnections() {
    const owner = await account('pro')
    const first = await add(owner.id)
    const second = await add(owner.id)
    const third = await add(owner.id)
    return { owner, first, second, third }
  }

  /** [id, is_default] of each listed connection of the account. */
  async function defaults(accountId: number) {
    const listed = await listConnections(app.services.sql, accountId)
    return listed.map((c) => [c.id, c.is_default])
  }

  it('makes the first connection the default and later ones not', async () => {
    const { owner, first, second, third } = await threeConnections()
    expect([first.is_default, second.is_default, third.is_default]).toEqual([true, false, false])
    expect(await defaults(owner.id)).toEqual([
      [first.id, true],
      [second.id, false],
      [third.id, false],
    ])
  })

  it('makes the oldest remaining connection the default when the default is deleted', async () => {
    const { owner, first, second, third } = await threeConnections()
    expect(await deleteConnection(app.services.sql, first.id)).toEqual({
      deleted: true,
      new_default_id: second.id,
    })
    expect(await defaults(owner.id)).toEqual([
      [second.id, true],
      [third.id, false],
    ])
  })

  it('keeps the default when another connection is deleted, and says which it is', async () => {
    const { owner, first, second, third } = await threeConnections()
    expect(await deleteConnection(app.services.sql, second.id)).toEqual({
      deleted: true,
      new_default_id: first.id,
    })
    expect(await defaults(owner.id)).toEqual([
      [first.id, true],
      [third.id, false],
    ])
  })

  it('has no default left once the last connection is deleted; the next one added becomes it', async () => {
    const owner = await account('free')
    const only = await add(owner.id)
    expect(await deleteConnection(app.services.sql, only.id)).toEqual({ deleted: true, new_default_id: null })
    expect(await rowCount(owner.id)).toBe(0)
    expect(await add(owner.id)).toMatchObject({ is_default: true })
  })

  it('refuses to delete an unknown connection', async () => {
    expect((await refusal(deleteConnection(app.services.sql, 2_000_000_000))).code).toBe('UNKNOWN_CONNECTION')
  })
})

describe('plan limits: Free 1 connection, Pro unlimited', () => {
  it('refuses a second connection on Free with PLAN_LIMIT_REACHED and saves nothing', async () => {
    const owner = await account('free')
    await add(owner.id)
    const error = await refusal(add(owner.id))
    expect(error.code).toBe('PLAN_LIMIT_REACHED')
    expect(error.message).toMatch(/connection/i)
    expect(await rowCount(owner.id)).toBe(1)
  })

  it('lets Pro add several', async () => {
    const owner = await account('pro')
    for (let i = 0; i < 3; i++) await add(owner.id)
    expect(await rowCount(owner.id)).toBe(3)
  })
})

describe('status: disable, enable, pause, resume', () => {
  it('disables and enables', async () => {
    const owner = await account()
    const conn = await add(owner.id)
    expect(await disableConnection(app.services.sql, conn.id, true)).toMatchObject({
      id: conn.id,
      status: 'disabled',
    })
    expect((await listConnections(app.services.sql, owner.id))[0]?.status).toBe('disabled')
    expect(await disableConnection(app.services.sql, conn.id, false)).toMatchObject({
      id: conn.id,
      status: 'active',
    })
    expect((await listConnections(app.services.sql, owner.id))[0]?.status).toBe('active')
  })

  it('pauses until resumed when no duration is given', async () => {
    const owner = await account()
    const conn = await add(owner.id)
    const paused = await pauseConnection(app.services.sql, conn.id)
    expect(paused).toMatchObject({ id: conn.id, status: 'paused' })
    expect((await listConnections(app.services.sql, owner.id))[0]?.status).toBe('paused')
    expect(await resumeConnection(app.services.sql, conn.id)).toMatchObject({ id: conn.id, status: 'active' })
    expect((await listConnections(app.services.sql, owner.id))[0]?.status).toBe('active')
  })

  it('pauses for a number of minutes, then is active again by itself', async () => {
    const owner = await account()
    const conn = await add(owner.id)
    const paused = await pauseConnection(app.services.sql, conn.id, 30)
    expect(paused).toMatchObject({ id: conn.id, status: 'paused' })
    expectAbout(paused.paused_until, Date.now() + 30 * 60 * 1000)
    // The thirty minutes pass.
    await app.db.sql`update connections set paused_until = now() - interval '1 second' where id = ${conn.id}`
    expect((await listConnections(app.services.sql, owner.id))[0]?.status).toBe('active')
  })

  it('accepts a one-minute pause and refuses zero or negative minutes', async () => {
    const owner = await account()
    const conn = await add(owner.id)
    for (const minutes of [0, -5]) {
      expect((await refusal(() => pauseConnection(app.services.sql, conn.id, minutes))).code).toBe(
        'INVALID_CONNECTION',
      )
      expect((await listConnections(app.services.sql, owner.id))[0]?.status).toBe('active')
    }
    expect(await pauseConnection(app.services.sql, conn.id, 1)).toMatchObject({ status: 'paused' })
  })

  it('resumes a connection early from a timed pause', async () => {
    const owner = await account()
    const conn = await add(owner.id)
    await pauseConnection(app.services.sql, conn.id, 60)
    expect(await resumeConnection(app.services.sql, conn.id)).toMatchObject({ status: 'active' })
  })

  it('refuses an unknown connection', async () => {
    for (const attempt of [
      () => disableConnection(app.services.sql, 2_000_000_000, true),
      () => disableConnection(app.services.sql, 2_000_000_000, false),
      () => pauseConnection(app.services.sql, 2_000_000_000),
      () => pauseConnection(app.services.sql, 2_000_000_000, 10),
      () => resumeConnection(app.services.sql, 2_000_000_000),
    ]) {
      expect((await refusal(attempt)).code).toBe('UNKNOWN_CONNECTION')
    }
  })
})

describe('updateConnection', () => {
  it('changes the quota and the rate, keeping the rest', async () => {
    const owner = await account()
    const conn = await add(owner.id, { quota: { quota: 100, per: 'day' }, rate: 30 })
    const updated = await updateConnection(app.services, conn.id, { quota: { quota: 20, per: 'hour' } })
    expect(updated).toMatchObject({ id: conn.id, quota: 20, quota_period: 'hour', rate: 30, from: conn.from })
    const again = await updateConnection(app.services, conn.id, { rate: 60000 })
    expect(again).toMatchObject({ quota: 20, quota_period: 'hour', rate: 60000 })
    expect(await updateConnection(app.services, conn.id, { rate: 1 })).toMatchObject({ rate: 1 })
  })

  it('removes the quota with quota: null', async () => {
    const owner = await account()
    const conn = await add(owner.id, { quota: { quota: 100, per: 'day' } })
    expect(await updateConnection(app.services, conn.id, { quota: null })).toMatchObject({
      quota: null,
      quota_period: null,
    })
  })

  it('refuses out-of-range values and leaves the connection unchanged', async () => {
    const owner = await account()
    const conn = await add(owner.id, { quota: { quota: 100, per: 'day' }, rate: 30 })
    for (const input of [
      { rate: 0 },
      { rate: 60001 },
      { quota: { quota: 0, per: 'day' } },
      { quota: { quota: -3, per: 'hour' } },
      { quota: { quota: 10, per: 'week' } },
    ]) {
      expect((await refusal(updateConnection(app.services, conn.id, input))).code).toBe('INVALID_CONNECTION')
    }
    expect((await listConnections(app.services.sql, owner.id))[0]).toMatchObject({
      quota: 100,
      quota_period: 'day',
      rate: 30,
    })
  })

  it('tests a new password against the server first: a wrong one is refused and the old one kept', async () => {
    const owner = await account()
    const conn = await add(owner.id)
    const sealedBefore = await sealedPassword(conn.id)
    const attemptsBefore = starttls2525.authAttempts
    const error = await refusal(updateConnection(app.services, conn.id, { password: 'wrong-new-password' }))
    expect(starttls2525.authAttempts).toBe(attemptsBefore + 1)
    expect(error.code).toBe('SMTP_LOGIN_FAILED')
    expect(error.message).toContain('535')
    expect(error.message).not.toContain('wrong-new-password')
    expect(await sealedPassword(conn.id)).toBe(sealedBefore)
    expect(openPassword(TEST_SECRET, await sealedPassword(conn.id))).toBe(starttls2525.password)
  })

  it('stores a new password that the server accepts, encrypted', async () => {
    const owner = await account()
    const conn = await add(owner.id)
    const sealedBefore = await sealedPassword(conn.id)
    const attemptsBefore = starttls2525.authAttempts
    const updated = await updateConnection(app.services, conn.id, { password: starttls2525.password })
    expect(starttls2525.authAttempts).toBe(attemptsBefore + 1)
    expect(updated).toMatchObject({ id: conn.id, status: 'active' })
    const sealedAfter = await sealedPassword(conn.id)
    expect(sealedAfter).not.toBe(sealedBefore)
    expect(sealedAfter).not.toContain(starttls2525.password)
    expect(openPassword(TEST_SECRET, sealedAfter)).toBe(starttls2525.password)
  })

  it('refuses an unknown connection', async () => {
    expect((await refusal(updateConnection(app.services, 2_000_000_000, { rate: 10 }))).code).toBe(
      'UNKNOWN_CONNECTION',
    )
  })
})
