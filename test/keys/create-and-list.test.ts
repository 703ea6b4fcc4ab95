import { createHash } from 'node:crypto'
import { beforeAll, describe, expect, it } from 'vitest'
import { type Account, setPlan } from '../../src/accounts/accounts.ts'
import { authenticate, createKey, KEY_PREFIX, listKeys, revokeKey } from '../../src/keys/keys.ts'
import { useKeys } from '../support/keys.ts'
import { expectAbout } from '../support/matchers.ts'
import { refusal } from '../support/refusal.ts'

const { app, account, keyCount, authOf } = useKeys()

const DAY_MS = 24 * 60 * 60 * 1000

describe('createKey', () => {
  it('returns exactly {id, name, key, connection_id, expires_at} with the full secret', async () => {
    const owner = await account()
    const created = await createKey(app.services.sql, { accountId: owner.id, name: 'ci deploys' })
    expect(Object.keys(created).sort()).toEqual(['connection_id', 'expires_at', 'id', 'key', 'name'])
    expect(created).toEqual({
      id: expect.any(Number),
      name: 'ci deploys',
      key: expect.any(String),
      connection_id: null,
      expires_at: null,
    })
    expect(Number.isInteger(created.id)).toBe(true)
    // A recognisable prefix, then at least 128 bits of randomness (22 base64url characters).
    expect(created.key.startsWith(KEY_PREFIX)).toBe(true)
    expect(created.key.length - KEY_PREFIX.length).toBeGreaterThanOrEqual(22)
    // The returned secret is the one that authenticates.
    expect(await authenticate(app.services.sql, created.key)).toEqual(authOf(owner, created.id, 'free'))
  })

  it('gives every key a different secret', async () => {
    const owner = await account('pro')
    const secrets = new Set<string>()
    for (let i = 0; i < 5; i++) {
      secrets.add((await createKey(app.services.sql, { accountId: owner.id, name: `k${i}` })).key)
    }
    expect(secrets.size).toBe(5)
  })

  it('keeps only a SHA-256 hash of the secret in the database', async () => {
    const owner = await account()
    const { id, key } = await createKey(app.services.sql, { accountId: owner.id, name: 'hashed' })
    const [row] = await app.db.sql<{ doc: string; secret_sha256: Buffer }[]>`
      select to_jsonb(k)::text as doc, secret_sha256 from api_keys k where id = ${id}`
    expect(row).toBeDefined()
    expect(row?.doc).not.toContain(key)
    expect(row?.doc).not.toContain(key.slice(KEY_PREFIX.length))
    expect(Buffer.compare(row?.secret_sha256 as Buffer, createHash('sha256').update(key).digest())).toBe(0)
  })

  it('refuses a key without a name and creates nothing', async () => {
    const owner = await account()
    const error = await refusal(createKey(app.services.sql, { accountId: owner.id, name: '   ' }))
    expect(error.code).toBe('INVALID_NAME')
    expect(await keyCount(owner.id)).toBe(0)
  })

  it('refuses an account that does not exist', async () => {
    const error = await refusal(createKey(app.services.sql, { accountId: 2_000_000_000, name: 'nobody' }))
    expect(error.code).toBe('ACCOUNT_NOT_FOUND')
  })
})

describe('listKeys', () => {
  it('lists the keys without their secret or its hash', async () => {
    const owner = await account('pro')
    const a = await createKey(app.services.sql, { accountId: owner.id, name: 'first' })
    const b = await createKey(app.services.sql, { accountId: owner.id, name: 'second', expiresInDays: 30 })
    const listed = await listKeys(app.services.sql, owner.id)
    expect(listed.map((k) => k.id)).toEqual([a.id, b.id])
    expect(listed[0]).toMatchObject({
      id: a.id,
      name: 'first',
      connection_id: null,
      expires_at: null,
      status: 'active',
    })
    expect(listed[1]).toMatchObject({ id: b.id, name: 'second', connection_id: null, status: 'active' })
    expect(listed[1]?.expires_at).toBe(b.expires_at)

    const text = JSON.stringify(listed)
    for (const { key } of [a, b]) {
      const digest = createHash('sha256').update(key).digest()
      expect(text).not.toContain(key)
      expect(text).not.toContain(key.slice(KEY_PREFIX.length))
      expect(text).not.toContain(digest.toString('hex'))
      expect(text).not.toContain(digest.toString('base64'))
    }
    for (const listedKey of listed) {
      expect(listedKey).not.toHaveProperty('key')
      expect(listedKey).not.toHaveProperty('secret')
      expect(listedKey).not.toHaveProperty('secret_sha256')
      for (const value of Object.values(listedKey)) expect(Buffer.isBuffer(value)).toBe(false)
    }
  })

  it("lists only the account's own keys", async () => {
    const [one, two] = await Promise.all([account(), account()])
    await createKey(app.services.sql, { accountId: one.id, name: 'mine' })
    expect(await listKeys(app.services.sql, two.id)).toEqual([])
  })
})

describe('expiration: never, or 7 to 365 days', () => {
  let owner: Account
  beforeAll(async () => {
    owner = await account('pro')
  })

  it.each([6, 366, 0, -7, 7.5])('refuses %s days and creates nothing', async (days) => {
    const before = await keyCount(owner.id)
    const error = await refusal(
      createKey(app.services.sql, { accountId: owner.id, name: `expiry ${days}`, expiresInDays: days }),
    )
    expect(error.code).toBe('INVALID_EXPIRY')
    expect(error.message).toMatch(/7/)
    expect(error.message).toMatch(/365/)
    expect(await keyCount(owner.id)).toBe(before)
  })

  it.each([7, 365])('accepts %s days: expires_at is that many days from now', async (days) => {
    const created = await createKey(app.services.sql, {
      accountId: owner.id,
      name: `expiry ${days}`,
      expiresInDays: days,
    })
    expectAbout(created.expires_at, Date.now() + days * DAY_MS)
    expect(await authenticate(app.services.sql, created.key)).toMatchObject({ keyId: created.id })
  })

  it('never expires when no expiry is given', async () => {
    const created = await createKey(app.services.sql, { accountId: owner.id, name: 'forever' })
    expect(created.expires_at).toBeNull()
    const [listed] = (await listKeys(app.services.sql, owner.id)).filter((k) => k.id === created.id)
    expect(listed?.expires_at).toBeNull()
  })

  it('stops authenticating a key once it has expired', async () => {
    const created = await createKey(app.services.sql, {
      accountId: owner.id,
      name: 'short',
      expiresInDays: 7,
    })
    expect(await authenticate(app.services.sql, created.key)).toBeDefined()
    // Seven days pass.
    await app.db.sql`update api_keys set expires_at = now() - interval '1 second' where id = ${created.id}`
    expect(await authenticate(app.services.sql, created.key)).toBeUndefined()
    const [listed] = (await listKeys(app.services.sql, owner.id)).filter((k) => k.id === created.id)
    expect(listed?.status).toBe('expired')
  })
})

describe('plan limits: Free 1 key, Pro unlimited', () => {
  it('refuses a second key on Free with PLAN_LIMIT_REACHED, and allows one again after a revoke', async () => {
    const owner = await account('free')
    const first = await createKey(app.services.sql, { accountId: owner.id, name: 'first' })
    const error = await refusal(createKey(app.services.sql, { accountId: owner.id, name: 'second' }))
    expect(error.code).toBe('PLAN_LIMIT_REACHED')
    expect(error.message).toMatch(/key/i)
    expect(await keyCount(owner.id)).toBe(1)

    await revokeKey(app.services.sql, first.id)
    const replacement = await createKey(app.services.sql, { accountId: owner.id, name: 'replacement' })
    expect(await authenticate(app.services.sql, replacement.key)).toMatchObject({ keyId: replacement.id })
    // And the limit holds again with the replacement.
    expect((await refusal(createKey(app.services.sql, { accountId: owner.id, name: 'third' }))).code).toBe(
      'PLAN_LIMIT_REACHED',
    )
  })

  it('lets a Pro account have several keys, all working', async () => {
    const owner = await account('pro')
    const keys = []
    for (let i = 0; i < 4; i++)
      keys.push(await createKey(app.services.sql, { accountId: owner.id, name: `k${i}` }))
    expect(await listKeys(app.services.sql, owner.id)).toHaveLength(4)
    for (const k of keys) expect(await authenticate(app.services.sql, k.key)).toMatchObject({ keyId: k.id })
  })

  it('tokens authenticated together (one round, one statement) each get their own answer', async () => {
    const owner = await account('pro')
    const other = await account('free')
    const [a, b, revoked, others] = [
      await createKey(app.services.sql, { accountId: owner.id, name: 'a' }),
      await createKey(app.services.sql, { accountId: owner.id, name: 'b' }),
      await createKey(app.services.sql, { accountId: owner.id, name: 'revoked' }),
      await createKey(app.services.sql, { accountId: other.id, name: 'other' }),
    ]
    await revokeKey(app.services.sql, revoked.id)
    const tokens = [b.key, a.key, revoked.key, `${KEY_PREFIX}unknown`, others.key, a.key]
    const callers = await Promise.all(tokens.map((token) => app.services.fastPath.callers.lookUp(token)))
    expect(callers).toEqual([
      authOf(owner, b.id, 'pro'),
      authOf(owner, a.id, 'pro'),
      undefined,
      undefined,
      authOf(other, others.id, 'free'),
      authOf(owner, a.id, 'pro'),
    ])
  })

  it('keeps existing keys working after a downgrade to Free, but refuses a new one', async () => {
    const owner = await account('pro')
    const a = await createKey(app.services.sql, { accountId: owner.id, name: 'a' })
    const b = await createKey(app.services.sql, { accountId: owner.id, name: 'b' })
    await setPlan(app.services.sql, owner.id, 'free')
    expect(await authenticate(app.services.sql, a.key)).toMatchObject({ keyId: a.id, plan: 'free' })
    expect(await authenticate(app.services.sql, b.key)).toMatchObject({ keyId: b.id, plan: 'free' })
    expect((await refusal(createKey(app.services.sql, { accountId: owner.id, name: 'c' }))).code).toBe(
      'PLAN_LIMIT_REACHED',
    )
  })
})
