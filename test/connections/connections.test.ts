import { describe, expect, it } from 'vitest'
import { createAccount } from '../../src/accounts/accounts.ts'
import { addConnection, listConnections } from '../../src/connections/connections.ts'
import { openPassword, SecretBoxError } from '../../src/smtp/secret-box.ts'
import { startTestApp, TEST_SECRET } from '../support/app.ts'
import { useConnections } from '../support/connections.ts'
import { refusal } from '../support/refusal.ts'

const { app, sinks, account, fresh, add, rowCount, sealedPassword } = useConnections()

describe('addConnection tests the SMTP login, then saves', () => {
  it.each([
    ['465 (implicit TLS)', () => sinks.tls465],
    ['587 (STARTTLS)', () => sinks.starttls587],
    ['2525 (STARTTLS)', () => sinks.starttls2525],
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
    const attemptsBefore = sinks.starttls587.authAttempts
    const error = await refusal(
      addConnection(app.services, {
        accountId: owner.id,
        ...sinks.starttls587.login,
        password: 'not-the-password',
        from: fresh(),
      }),
    )
    expect(sinks.starttls587.authAttempts).toBe(attemptsBefore + 1)
    expect(error.code).toBe('SMTP_LOGIN_FAILED')
    expect(error.message).toContain('535')
    expect(error.message).toContain('Authentication credentials invalid')
    expect(error.message).not.toContain('not-the-password')
    expect(error.message).not.toContain('\n')
    expect(await rowCount(owner.id)).toBe(0)
  })

  it.each([25, 2526, 0, 466])('refuses port %s before connecting anywhere', async (port) => {
    const owner = await account()
    const before = { connections: sinks.starttls2525.connections, auth: sinks.starttls2525.authAttempts }
    const error = await refusal(
      addConnection(app.services, { accountId: owner.id, ...sinks.starttls2525.login, port, from: fresh() }),
    )
    expect(error.code).toBe('INVALID_CONNECTION')
    expect(error.message).toMatch(/465/)
    expect(error.message).toMatch(/587/)
    expect(error.message).toMatch(/2525/)
    expect({ connections: sinks.starttls2525.connections, auth: sinks.starttls2525.authAttempts }).toEqual(
      before,
    )
    expect(await rowCount(owner.id)).toBe(0)
  })

  it('refuses a 587 server that does not offer STARTTLS without ever sending the password', async () => {
    const owner = await account()
    const error = await refusal(
      addConnection(app.services, { accountId: owner.id, ...sinks.plain587.login, from: fresh() }),
    )
    expect(error.code).toBe('SMTP_LOGIN_FAILED')
    expect(sinks.plain587.connections).toBeGreaterThan(0)
    expect(sinks.plain587.authAttempts).toBe(0)
    expect(error.message).not.toContain(sinks.plain587.password)
    expect(await rowCount(owner.id)).toBe(0)
  })

  it('refuses a host on a private address unless private hosts are allowed', async () => {
    const strict = await startTestApp({ allowPrivateSmtpHosts: false })
    try {
      const owner = await createAccount(strict.services.sql, { email: 'strict@example.com', plan: 'pro' })
      const before = sinks.starttls587.connections
      const error = await refusal(
        addConnection(strict.services, { accountId: owner.id, ...sinks.starttls587.login, from: fresh() }),
      )
      expect(error.code).toBe('SMTP_LOGIN_FAILED')
      expect(error.message).toContain('MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS')
      expect(sinks.starttls587.connections).toBe(before)
      const [row] = await strict.db.sql<{ n: number }[]>`select count(*)::int as n from connections`
      expect(row?.n).toBe(0)
      // A name that resolves to loopback is refused just the same.
      const byName = await refusal(
        addConnection(strict.services, {
          accountId: owner.id,
          ...sinks.starttls587.login,
          host: 'localhost',
          from: fresh(),
        }),
      )
      expect(byName.code).toBe('SMTP_LOGIN_FAILED')
      expect(sinks.starttls587.connections).toBe(before)
    } finally {
      await strict.close()
    }
    // The main test app allows private hosts: the same login is accepted there.
    const owner = await account()
    const saved = await addConnection(app.services, {
      accountId: owner.id,
      ...sinks.starttls587.login,
      from: fresh(),
    })
    expect(saved.status).toBe('active')
  })
})

describe('the from address', () => {
  it('defaults to the username when that is an address', async () => {
    const owner = await account()
    const saved = await addConnection(app.services, { accountId: owner.id, ...sinks.starttls587.login })
    expect(saved.from).toBe('sender@example.com')
  })

  it('is required when the username is not an address, and nothing is saved without it', async () => {
    const owner = await account()
    const attemptsBefore = sinks.starttls2525.authAttempts
    const error = await refusal(
      addConnection(app.services, { accountId: owner.id, ...sinks.starttls2525.login }),
    )
    expect(error.code).toBe('INVALID_CONNECTION')
    expect(error.message).toMatch(/from/)
    expect(sinks.starttls2525.authAttempts).toBe(attemptsBefore)
    expect(await rowCount(owner.id)).toBe(0)
    const saved = await addConnection(app.services, {
      accountId: owner.id,
      ...sinks.starttls2525.login,
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
        addConnection(app.services, { accountId: owner.id, ...sinks.starttls2525.login, from }),
      )
      expect(error.code).toBe('INVALID_CONNECTION')
    }
    expect(await rowCount(owner.id)).toBe(0)
    // A local part of 64, `=` in it: the longest the API takes, and a bounce address's shape.
    const longest = `${'a'.repeat(62)}=b@example.com`
    const saved = await addConnection(app.services, {
      accountId: owner.id,
      ...sinks.starttls2525.login,
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
      ...sinks.tls465.login,
      from: fresh(),
    })
    const sealed = await sealedPassword(saved.id)
    expect(sealed).not.toContain(sinks.tls465.password)
    expect(sealed).not.toContain(Buffer.from(sinks.tls465.password).toString('base64'))
    expect(sealed).not.toContain(Buffer.from(sinks.tls465.password).toString('base64url'))
    expect(openPassword(TEST_SECRET, sealed)).toBe(sinks.tls465.password)
    expect(() => openPassword(`${TEST_SECRET}-but-another-one`, sealed)).toThrow(SecretBoxError)
    // The password is not in any other column either.
    const [row] = await app.db.sql<{ doc: string }[]>`
      select to_jsonb(c)::text as doc from connections c where id = ${saved.id}`
    expect(row?.doc).not.toContain(sinks.tls465.password)
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
