import { describe, expect, it } from 'vitest'
import { type Audience, createTemporaryAudience } from '../../../src/audiences/audiences.ts'
import { operations } from '../../../src/generated/routes.ts'
import { type SeededAccount, seedAccount, useTestApp } from '../../support/app.ts'
import {
  ACCESS_DENIED,
  AUDIENCE_NOT_FOUND,
  audienceRequests,
  content,
  expectedAudience,
  INVALID_ID,
  statusAndBody,
} from '../../support/audiences.ts'
import { humanText } from '../../support/matchers.ts'

const app = useTestApp()
const { pro, create, list, get, put, remove, createOk, addMembers, expectUnchanged } = audienceRequests(app)

describe('GET /audiences order and scope', () => {
  it('orders by creation time, newest first, then by id, newest first', async () => {
    const owner = await pro()
    const older = await createOk(owner, { name: 'Created first, dated last' })
    const a = await createOk(owner, { name: 'Same instant A' })
    const b = await createOk(owner, { name: 'Same instant B' })
    await app.services.sql`
      update audiences set created_at = case when id = ${older.id} then now() + interval '1 hour'
        else timestamptz '2025-01-10 08:00:00+00' end
      where id in (${older.id}, ${a.id}, ${b.id})`
    const { audiences } = await (await list(owner)).json()
    expect(audiences.map((audience: Audience) => audience.id)).toEqual([older.id, b.id, a.id])
    expect(audiences[1].created_at).toBe('2025-01-10 08:00:00')
  })

  it('lists only the caller’s audiences', async () => {
    const owner = await pro()
    const other = await pro()
    const mine = await createOk(owner)
    const theirs = await createOk(other, { name: 'Theirs' })
    expect(await (await list(owner)).json()).toEqual({
      success: true,
      audiences: [{ ...mine, member_count: 0 }],
    })
    expect(await (await list(other)).json()).toEqual({
      success: true,
      audiences: [{ ...theirs, member_count: 0 }],
    })
  })
})

describe('temporary audiences (behind recipients batches)', () => {
  const recipients = ['ada@example.com', 'Grace@example.com', 'ADA@EXAMPLE.COM', 'grace@example.com']

  it('are left out of GET /audiences but read by ID, temporary 1, one member per address', async () => {
    const owner = await pro()
    const lasting = await createOk(owner)
    const id = await createTemporaryAudience(app.services.sql, owner.account.id, recipients, 'Spring sale')
    expect(await (await list(owner)).json()).toEqual({
      success: true,
      audiences: [{ ...lasting, member_count: 0 }],
    })
    expect(await statusAndBody(await get(owner, id))).toEqual({
      status: 200,
      body: {
        success: true,
        audience: expectedAudience(owner, { id, name: 'Spring sale', temporary: 1, member_count: 2 }),
      },
    })
    const members = await (await app.request(`/audiences/${id}/members`, { key: owner.key })).json()
    expect(members.members.map((member: { email: string }) => member.email)).toEqual([
      'ada@example.com',
      'Grace@example.com',
    ])
  })

  it('are another account’s like any other: 403 Access denied', async () => {
    const owner = await pro()
    const intruder = await pro()
    const id = await createTemporaryAudience(app.services.sql, owner.account.id, recipients, 'Private batch')
    expect(await statusAndBody(await get(intruder, id))).toEqual(ACCESS_DENIED)
  })
})

describe('Free plan', () => {
  const refusal = {
    status: 403,
    body: {
      code: 'FEATURE_NOT_AVAILABLE',
      message: humanText,
      details: { feature: 'audiences', upgradeRequired: true },
    },
  }
  const VALID_BODIES: Record<string, unknown> = {
    createAudience: content,
    updateAudience: { name: 'Renamed' },
    addAudienceMembers: { members: [{ email: 'ada@example.com' }] },
  }
  const audienceOperations = operations
    .filter((op) => op.path.startsWith('/audiences'))
    .map((op) => ({ ...op, METHOD: op.method.toUpperCase() }))

  it('covers all eight audience operations', () => {
    expect(audienceOperations.map((op) => op.operationId).sort()).toEqual([
      'addAudienceMembers',
      'createAudience',
      'deleteAudience',
      'deleteAudienceMember',
      'getAudience',
      'listAudienceMembers',
      'listAudiences',
      'updateAudience',
    ])
  })

  it.each(audienceOperations)('$METHOD $path answers 403 FEATURE_NOT_AVAILABLE', async (op) => {
    const owner = await pro()
    const audience = await createOk(owner)
    await addMembers(owner, audience.id, ['ada@example.com'])
    const [member] = await app.services.sql<{ id: number }[]>`
      select id from audience_members where audience_id = ${audience.id}`
    // A Free account reaching its own audience, e.g. one kept after a downgrade.
    await app.services.sql`update accounts set plan = 'free' where id = ${owner.account.id}`
    const path = op.path.replace('{id}', String(audience.id)).replace('{memberId}', String(member?.id))
    const body = VALID_BODIES[op.operationId]
    const response = await app.request(path, { method: op.METHOD, key: owner.key, ...(body ? { body } : {}) })
    expect(await statusAndBody(response)).toEqual(refusal)
    await app.services.sql`update accounts set plan = 'pro' where id = ${owner.account.id}`
    await expectUnchanged(owner, audience, 1)
  })

  it.each(audienceOperations)('$METHOD $path answers 403 before checking the ID and body', async (op) => {
    const free = await seedAccount(app, { plan: 'free' })
    const path = op.path.replace(/\{[^}]+\}/g, 'abc')
    const body = VALID_BODIES[op.operationId] ? { name: 42, members: [] } : undefined
    const response = await app.request(path, { method: op.METHOD, key: free.key, ...(body ? { body } : {}) })
    expect(await statusAndBody(response)).toEqual(refusal)
  })

  it('an unknown route under /audiences stays 404 NOT_FOUND', async () => {
    const free = await seedAccount(app, { plan: 'free' })
    for (const [method, path] of [
      ['PATCH', '/audiences'],
      ['GET', '/audiences/1/unknown'],
    ] as const) {
      const response = await app.request(path, { method, key: free.key })
      expect(await statusAndBody(response)).toEqual({
        status: 404,
        body: { code: 'NOT_FOUND', message: humanText },
      })
    }
  })

  it('POST /audiences on Free creates nothing', async () => {
    const free = await seedAccount(app, { plan: 'free' })
    expect((await create(free)).status).toBe(403)
    const [{ count } = { count: -1 }] = await app.services.sql<{ count: number }[]>`
      select count(*)::int as count from audiences where account_id = ${free.account.id}`
    expect(count).toBe(0)
  })
})

describe('another account’s audience', () => {
  async function ownerAndIntruder() {
    const owner = await pro()
    const intruder = await pro()
    const created = await createOk(owner)
    return { owner, intruder, created }
  }

  it('GET answers 403 {error: "Access denied"}', async () => {
    const { intruder, created } = await ownerAndIntruder()
    expect(await statusAndBody(await get(intruder, created.id))).toEqual(ACCESS_DENIED)
  })

  it('PUT answers 403 {error: "Access denied"} and the audience is not modified', async () => {
    const { owner, intruder, created } = await ownerAndIntruder()
    expect(await statusAndBody(await put(intruder, created.id, { name: 'Hijacked' }))).toEqual(ACCESS_DENIED)
    await expectUnchanged(owner, created)
  })

  it('DELETE answers 403 {error: "Access denied"} and the audience is not deleted', async () => {
    const { owner, intruder, created } = await ownerAndIntruder()
    expect(await statusAndBody(await remove(intruder, created.id))).toEqual(ACCESS_DENIED)
    await expectUnchanged(owner, created)
  })
})

describe('audience IDs', () => {
  const requests = {
    GET: (who: SeededAccount, id: number | string) => get(who, id),
    PUT: (who: SeededAccount, id: number | string) => put(who, id, { name: 'x' }),
    DELETE: (who: SeededAccount, id: number | string) => remove(who, id),
  }

  it.each(Object.keys(requests) as (keyof typeof requests)[])(
    '%s of an ID that does not exist (deleted, or beyond any row) answers 404 {error: "Audience not found"}',
    async (method) => {
      const owner = await pro()
      const created = await createOk(owner)
      await remove(owner, created.id)
      for (const id of [created.id, 2147483647, 2147483648, 99999999999, '99999999999999999999']) {
        expect(await statusAndBody(await requests[method](owner, id)), `id ${id}`).toEqual(AUDIENCE_NOT_FOUND)
      }
    },
  )

  it.each(Object.keys(requests) as (keyof typeof requests)[])(
    '%s of a non-numeric ID answers 400 INVALID_ID',
    async (method) => {
      const owner = await pro()
      for (const id of ['abc', '1.5', '-1', '1e3']) {
        expect(await statusAndBody(await requests[method](owner, id)), `id ${id}`).toEqual(INVALID_ID)
      }
    },
  )
})
