import { beforeAll, describe, expect, it } from 'vitest'
import { type Account, setPlan } from '../../src/accounts/accounts.ts'
import { type ConnectionView, deleteConnection } from '../../src/connections/connections.ts'
import {
  authenticate,
  createKey,
  KEY_PREFIX,
  listKeys,
  revokeKey,
  rotateKey,
  scopeKey,
} from '../../src/keys/keys.ts'
import { useKeys } from '../support/keys.ts'
import { refusal } from '../support/refusal.ts'

const { app, account, connection, keyCount, authOf } = useKeys()

describe('rotateKey', () => {
  it('issues a new secret for the same key; the old secret stops working at once', async () => {
    const owner = await account()
    const created = await createKey(app.services.sql, { accountId: owner.id, name: 'rotating' })
    const rotated = await rotateKey(app.services.sql, created.id)
    expect(Object.keys(rotated).sort()).toEqual(['id', 'key'])
    expect(rotated.id).toBe(created.id)
    expect(rotated.key).not.toBe(created.key)
    expect(rotated.key.startsWith(KEY_PREFIX)).toBe(true)

    expect(await authenticate(app.services.sql, created.key)).toBeUndefined()
    expect(await authenticate(app.services.sql, rotated.key)).toEqual(authOf(owner, created.id, 'free'))
    // Same key: name kept, still one key on the account.
    const listed = await listKeys(app.services.sql, owner.id)
    expect(listed).toHaveLength(1)
    expect(listed[0]).toMatchObject({ id: created.id, name: 'rotating', status: 'active' })

    // Rotating again retires the second secret too.
    const again = await rotateKey(app.services.sql, created.id)
    expect(await authenticate(app.services.sql, rotated.key)).toBeUndefined()
    expect(await authenticate(app.services.sql, again.key)).toMatchObject({ keyId: created.id })
  })

  it('keeps the scope and expiry of the key', async () => {
    const owner = await account()
    const conn = await connection(owner.id)
    const created = await createKey(app.services.sql, {
      accountId: owner.id,
      name: 'scoped',
      connectionId: conn.id,
      expiresInDays: 30,
    })
    const rotated = await rotateKey(app.services.sql, created.id)
    expect(await authenticate(app.services.sql, rotated.key)).toMatchObject({ connectionId: conn.id })
    const [listed] = await listKeys(app.services.sql, owner.id)
    expect(listed).toMatchObject({ connection_id: conn.id, expires_at: created.expires_at })
  })

  it('refuses an unknown key', async () => {
    expect((await refusal(rotateKey(app.services.sql, 2_000_000_000))).code).toBe('KEY_NOT_FOUND')
  })
})

describe('revokeKey', () => {
  it('disables the key permanently: status revoked, no authentication, no rotation', async () => {
    const owner = await account()
    const created = await createKey(app.services.sql, { accountId: owner.id, name: 'doomed' })
    const revoked = await revokeKey(app.services.sql, created.id)
    expect(revoked).toMatchObject({ id: created.id, name: 'doomed', status: 'revoked' })
    expect(revoked).not.toHaveProperty('key')
    expect(await authenticate(app.services.sql, created.key)).toBeUndefined()

    const error = await refusal(rotateKey(app.services.sql, created.id))
    expect(error.code).toBe('KEY_REVOKED')
    expect(await authenticate(app.services.sql, created.key)).toBeUndefined()

    // Still listed, as revoked.
    const [listed] = await listKeys(app.services.sql, owner.id)
    expect(listed).toMatchObject({ id: created.id, status: 'revoked' })
  })

  it('refuses an unknown key', async () => {
    expect((await refusal(revokeKey(app.services.sql, 2_000_000_000))).code).toBe('KEY_NOT_FOUND')
  })
})

describe('connection scope', () => {
  let owner: Account
  let own: ConnectionView
  let other: ConnectionView
  beforeAll(async () => {
    owner = await account('pro')
    const stranger = await account('pro')
    ;[own, other] = await Promise.all([connection(owner.id), connection(stranger.id)])
  })

  it('creates a key scoped to one of its own connections', async () => {
    const created = await createKey(app.services.sql, {
      accountId: owner.id,
      name: 'scoped',
      connectionId: own.id,
    })
    expect(created.connection_id).toBe(own.id)
    expect(await authenticate(app.services.sql, created.key)).toEqual(
      authOf(owner, created.id, 'pro', own.id),
    )
  })

  it("refuses to scope a new key to another account's connection and creates nothing", async () => {
    const before = await keyCount(owner.id)
    const error = await refusal(
      createKey(app.services.sql, { accountId: owner.id, name: 'stolen', connectionId: other.id }),
    )
    expect(error.code).toBe('UNKNOWN_CONNECTION')
    expect(await keyCount(owner.id)).toBe(before)
  })

  it('re-scopes a key to one connection and back to all connections', async () => {
    const created = await createKey(app.services.sql, { accountId: owner.id, name: 'rescoped' })
    const scoped = await scopeKey(app.services.sql, created.id, own.id)
    expect(scoped).toMatchObject({ id: created.id, connection_id: own.id, status: 'active' })
    expect(await authenticate(app.services.sql, created.key)).toMatchObject({ connectionId: own.id })

    const all = await scopeKey(app.services.sql, created.id, null)
    expect(all).toMatchObject({ id: created.id, connection_id: null, status: 'active' })
    expect(await authenticate(app.services.sql, created.key)).toMatchObject({ connectionId: null })
  })

  it("refuses to re-scope a key to another account's connection and leaves it unchanged", async () => {
    const created = await createKey(app.services.sql, {
      accountId: owner.id,
      name: 'kept',
      connectionId: own.id,
    })
    const error = await refusal(scopeKey(app.services.sql, created.id, other.id))
    expect(error.code).toBe('UNKNOWN_CONNECTION')
    expect(await authenticate(app.services.sql, created.key)).toMatchObject({ connectionId: own.id })
    const [listed] = (await listKeys(app.services.sql, owner.id)).filter((k) => k.id === created.id)
    expect(listed?.connection_id).toBe(own.id)
  })

  it('refuses to scope an unknown key', async () => {
    expect((await refusal(scopeKey(app.services.sql, 2_000_000_000, null))).code).toBe('KEY_NOT_FOUND')
  })

  it('stops a key scoped to a connection that is then deleted; an unscoped key keeps working', async () => {
    const doomed = await connection(owner.id)
    const scoped = await createKey(app.services.sql, {
      accountId: owner.id,
      name: 'on doomed',
      connectionId: doomed.id,
    })
    const unscoped = await createKey(app.services.sql, { accountId: owner.id, name: 'everywhere' })
    await deleteConnection(app.services.sql, doomed.id)
    expect(await authenticate(app.services.sql, scoped.key)).toBeUndefined()
    expect(await authenticate(app.services.sql, unscoped.key)).toMatchObject({ keyId: unscoped.id })
  })
})

describe('authenticate', () => {
  it('gives exactly {accountId, keyId, plan, connectionId} and follows the plan', async () => {
    const owner = await account('free')
    const created = await createKey(app.services.sql, { accountId: owner.id, name: 'who' })
    expect(await authenticate(app.services.sql, created.key)).toEqual(authOf(owner, created.id, 'free'))
    await setPlan(app.services.sql, owner.id, 'pro')
    expect(await authenticate(app.services.sql, created.key)).toEqual(authOf(owner, created.id, 'pro'))
  })

  it('refuses unknown, altered and malformed tokens', async () => {
    const owner = await account()
    const { key } = await createKey(app.services.sql, { accountId: owner.id, name: 'real' })
    const last = key.at(-1) === 'A' ? 'B' : 'A'
    for (const token of [
      `${key.slice(0, -1)}${last}`,
      `${key}x`,
      key.slice(0, -1),
      key.slice(KEY_PREFIX.length),
      KEY_PREFIX,
      '',
      'not a key at all',
    ]) {
      expect(await authenticate(app.services.sql, token)).toBeUndefined()
    }
  })
})
