import { createHash, randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { deleteConnection } from '../../src/connections/connections.ts'
import { operations } from '../../src/generated/routes.ts'
import { createKey, revokeKey, rotateKey } from '../../src/keys/keys.ts'
import { seedAccount, useTestApp } from '../support/app.ts'

const MISSING = { error: 'Missing or invalid Authorization header' }
const INVALID = { error: 'Invalid or expired API token' }

const app = useTestApp()

/** Every operation of the contract, with `1` for each path parameter. */
const everyOperation = operations.map(({ operationId, method, path }) => ({
  operationId,
  method: method.toUpperCase(),
  path: path.replace(/\{[^}]+\}/g, '1'),
}))

/** Sends a raw `Authorization` header value (or none) to one operation. */
function call(op: { method: string; path: string }, authorization?: string) {
  const headers: Record<string, string> = {}
  if (authorization !== undefined) headers.authorization = authorization
  return app.request(op.path, { method: op.method, headers })
}

async function expectStatusAndBody(response: Response, status: number, body: unknown) {
  expect({ status: response.status, body: await response.json() }).toEqual({ status, body })
}

function unknownKey(): string {
  return `mr_${randomBytes(32).toString('base64url')}`
}

async function listTemplatesWith(key: string) {
  return app.request('/templates', { key })
}

describe('requests without a usable Authorization header', () => {
  it('covers every operation of the contract', () => {
    expect(everyOperation).toHaveLength(34)
  })

  it.each(everyOperation)(
    '$method $path without an Authorization header answers 401 with the missing-header body',
    async (op) => {
      await expectStatusAndBody(await call(op), 401, MISSING)
    },
  )

  for (const header of ['Basic abc', 'Bearer', 'Bearer  ']) {
    it.each(everyOperation)(
      `$method $path with a malformed header (${JSON.stringify(header)}) answers 401 with the missing-header body`,
      async (op) => {
        await expectStatusAndBody(await call(op, header), 401, MISSING)
      },
    )
  }
})

describe('requests with a well-formed bearer header but no valid key', () => {
  it.each(everyOperation)(
    '$method $path with an unknown mr_ key answers 401 Invalid or expired API token',
    async (op) => {
      await expectStatusAndBody(await call(op, `Bearer ${unknownKey()}`), 401, INVALID)
    },
  )

  it('a token without the mr_ prefix is a wrong key: 401 Invalid or expired API token', async () => {
    await expectStatusAndBody(await call({ method: 'GET', path: '/templates' }, 'Bearer abc'), 401, INVALID)
  })
})

describe('key lifecycle', () => {
  it('a valid key is accepted (200 on GET /templates)', async () => {
    const { key } = await seedAccount(app)
    const response = await listTemplatesWith(key)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ success: true, templates: [] })
  })

  it('a revoked key answers 401 Invalid or expired API token', async () => {
    const { key, keyId } = await seedAccount(app)
    expect((await listTemplatesWith(key)).status).toBe(200)
    await revokeKey(app.services.sql, keyId)
    await expectStatusAndBody(await listTemplatesWith(key), 401, INVALID)
  })

  it('an expired key answers 401 Invalid or expired API token', async () => {
    const { account } = await seedAccount(app, { plan: 'pro' })
    const created = await createKey(app.services.sql, {
      accountId: account.id,
      name: 'expiring',
      expiresInDays: 7,
    })
    expect((await listTemplatesWith(created.key)).status).toBe(200)
    await app.services
      .sql`update api_keys set expires_at = now() - interval '1 second' where id = ${created.id}`
    await expectStatusAndBody(await listTemplatesWith(created.key), 401, INVALID)
  })

  it('after rotation the old secret answers 401 and the new one works', async () => {
    const { key, keyId } = await seedAccount(app)
    expect((await listTemplatesWith(key)).status).toBe(200)
    const rotated = await rotateKey(app.services.sql, keyId)
    expect(rotated.key).not.toBe(key)
    await expectStatusAndBody(await listTemplatesWith(key), 401, INVALID)
    const response = await listTemplatesWith(rotated.key)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ success: true, templates: [] })
  })

  it('a key scoped to a connection that was then deleted answers 401 Invalid or expired API token', async () => {
    const { account } = await seedAccount(app, { plan: 'pro' })
    const [connection] = await app.services.sql<{ id: number }[]>`
      insert into connections (account_id, from_address, host, port, username, password_encrypted, is_default)
      values (${account.id}, ${`sender-${account.id}@example.com`}, 'smtp.example.com', 587,
              ${`sender-${account.id}@example.com`}, 'not-really-encrypted', true)
      returning id`
    if (!connection) throw new Error('connection insert returned no row')
    const scoped = await createKey(app.services.sql, {
      accountId: account.id,
      name: 'scoped',
      connectionId: connection.id,
    })
    expect((await listTemplatesWith(scoped.key)).status).toBe(200)
    await deleteConnection(app.services.sql, connection.id)
    await expectStatusAndBody(await listTemplatesWith(scoped.key), 401, INVALID)
  })
})

describe('key storage and format', () => {
  it('stores only a SHA-256 hash of the key, never the key itself', async () => {
    const { key, keyId } = await seedAccount(app)
    const [row] = await app.services.sql<
      Record<string, unknown>[]
    >`select * from api_keys where id = ${keyId}`
    if (!row) throw new Error('key row not found')
    for (const [column, value] of Object.entries(row)) {
      if (value === null || value === undefined) continue
      const texts =
        value instanceof Uint8Array
          ? [
              Buffer.from(value).toString('utf8'),
              Buffer.from(value).toString('hex'),
              Buffer.from(value).toString('base64'),
              Buffer.from(value).toString('base64url'),
            ]
          : [value instanceof Date ? value.toISOString() : String(value)]
      for (const text of texts) {
        expect(text, `column ${column}`).not.toBe(key)
        expect(text.includes(key), `column ${column} contains the key`).toBe(false)
      }
    }
    const stored = row.secret_sha256
    expect(stored).toBeInstanceOf(Uint8Array)
    expect(Buffer.from(stored as Uint8Array).equals(createHash('sha256').update(key).digest())).toBe(true)
  })

  it('keys start with mr_ and carry at least 128 bits of base64url randomness', async () => {
    const first = await seedAccount(app)
    const second = await seedAccount(app)
    for (const { key } of [first, second]) {
      expect(key.startsWith('mr_')).toBe(true)
      const random = key.slice('mr_'.length)
      expect(random).toMatch(/^[A-Za-z0-9_-]+$/)
      expect(random.length).toBeGreaterThanOrEqual(22)
    }
    expect(first.key).not.toBe(second.key)
  })
})
