import { describe, expect, it } from 'vitest'
import { type AudienceMember, checkBatchAudience } from '../../../src/audiences/audiences.ts'
import { type SeededAccount, seedAccount, useTestApp } from '../../support/app.ts'
import {
  ACCESS_DENIED,
  AUDIENCE_NOT_FOUND,
  addresses,
  INVALID_ID,
  MEMBER_NOT_FOUND,
  memberRequests,
  statusAndBody,
} from '../../support/audiences.ts'
import { humanText, validationBody } from '../../support/matchers.ts'

const app = useTestApp()
const { ownerWithAudience, add, page, removeMember, expectAdded, allMembers, storedMemberCount } =
  memberRequests(app)

describe('GET /audiences/{id}/members', () => {
  it('pages through 250 members with limit 100: every member once, in id order, hasMore false at the end', async () => {
    const { owner, audienceId } = await ownerWithAudience()
    await expectAdded(owner, audienceId, addresses(250), { inserted: 250, duplicates: 0 })
    const seen: AudienceMember[] = []
    const pages: unknown[] = []
    for (let offset = 0, hasMore = true; hasMore; offset += 100) {
      const body = await (await page(owner, audienceId, `?limit=100&offset=${offset}`)).json()
      seen.push(...body.members)
      pages.push(body.pagination)
      hasMore = body.pagination.hasMore
    }
    expect(pages).toEqual([
      { total: 250, limit: 100, offset: 0, hasMore: true },
      { total: 250, limit: 100, offset: 100, hasMore: true },
      { total: 250, limit: 100, offset: 200, hasMore: false },
    ])
    expect(seen.map((member) => member.email)).toEqual(addresses(250).map((member) => member.email))
    const ids = seen.map((member) => member.id)
    expect(new Set(ids).size).toBe(250)
    expect(ids).toEqual([...ids].sort((a, b) => a - b))
  })

  it('defaults to limit 100 and offset 0', async () => {
    const { owner, audienceId } = await ownerWithAudience()
    await expectAdded(owner, audienceId, addresses(101), { inserted: 101, duplicates: 0 })
    const body = await (await page(owner, audienceId)).json()
    expect(body.members).toHaveLength(100)
    expect(body.pagination).toEqual({ total: 101, limit: 100, offset: 0, hasMore: true })
  })

  it('an offset past the end answers an empty page with the total', async () => {
    const { owner, audienceId } = await ownerWithAudience()
    await expectAdded(owner, audienceId, addresses(3), { inserted: 3, duplicates: 0 })
    expect(await statusAndBody(await page(owner, audienceId, '?offset=3'))).toEqual({
      status: 200,
      body: { success: true, members: [], pagination: { total: 3, limit: 100, offset: 3, hasMore: false } },
    })
  })

  it.each([
    { query: '?limit=1', length: 1, pagination: { total: 1001, limit: 1, offset: 0, hasMore: true } },
    {
      query: '?limit=1000',
      length: 1000,
      pagination: { total: 1001, limit: 1000, offset: 0, hasMore: true },
    },
    { query: '?offset=0', length: 100, pagination: { total: 1001, limit: 100, offset: 0, hasMore: true } },
    {
      query: '?limit=1000&offset=1000',
      length: 1,
      pagination: { total: 1001, limit: 1000, offset: 1000, hasMore: false },
    },
  ])('$query is accepted', async ({ query, length, pagination }) => {
    const { owner, audienceId } = await ownerWithAudience()
    await expectAdded(owner, audienceId, addresses(1001), { inserted: 1001, duplicates: 0 })
    const body = await (await page(owner, audienceId, query)).json()
    expect(body.members).toHaveLength(length)
    expect(body.pagination).toEqual(pagination)
  })

  it.each([
    { query: '?limit=0', path: ['limit'], code: 'too_small' },
    { query: '?limit=1001', path: ['limit'], code: 'too_big' },
    { query: '?limit=-5', path: ['limit'], code: 'too_small' },
    { query: '?limit=abc', path: ['limit'], code: 'invalid_format' },
    { query: '?offset=-1', path: ['offset'], code: 'too_small' },
    { query: '?offset=1.5', path: ['offset'], code: 'invalid_format' },
  ])('$query answers 400 with the validation body', async ({ query, path, code }) => {
    const { owner, audienceId } = await ownerWithAudience()
    expect(await statusAndBody(await page(owner, audienceId, query))).toEqual({
      status: 400,
      body: validationBody([{ path, code }]),
    })
  })
})

describe('DELETE /audiences/{id}/members/{memberId}', () => {
  it('answers 200 {success, message}; the member is gone and the count drops', async () => {
    const { owner, audienceId } = await ownerWithAudience()
    await expectAdded(owner, audienceId, addresses(2), { inserted: 2, duplicates: 0 })
    const [first, second] = await allMembers(owner, audienceId)
    expect(await statusAndBody(await removeMember(owner, audienceId, first?.id as number))).toEqual({
      status: 200,
      body: { success: true, message: humanText },
    })
    expect(await allMembers(owner, audienceId)).toEqual([second])
    const { audience } = await (await app.request(`/audiences/${audienceId}`, { key: owner.key })).json()
    expect(audience.member_count).toBe(1)
    expect(await statusAndBody(await removeMember(owner, audienceId, first?.id as number))).toEqual(
      MEMBER_NOT_FOUND,
    )
  })

  it('a removed address can be added again', async () => {
    const { owner, audienceId } = await ownerWithAudience()
    await expectAdded(owner, audienceId, [{ email: 'ada@example.com' }], { inserted: 1, duplicates: 0 })
    const [member] = await allMembers(owner, audienceId)
    await removeMember(owner, audienceId, member?.id as number)
    await expectAdded(owner, audienceId, [{ email: 'ADA@example.com' }], { inserted: 1, duplicates: 0 })
  })

  it('a member of another audience of the same account answers 404 {error: "Member not found"}', async () => {
    const { owner, audienceId } = await ownerWithAudience()
    const other = await app.request('/audiences', { key: owner.key, body: { name: 'Other' } })
    const otherId = (await other.json()).audience.id
    await expectAdded(owner, otherId, [{ email: 'ada@example.com' }], { inserted: 1, duplicates: 0 })
    const [member] = await allMembers(owner, otherId)
    expect(await statusAndBody(await removeMember(owner, audienceId, member?.id as number))).toEqual(
      MEMBER_NOT_FOUND,
    )
    expect(await allMembers(owner, otherId)).toEqual([member])
  })

  it.each([2147483647, 2147483648, 99999999999, '99999999999999999999'])(
    'member ID %s answers 404 {error: "Member not found"}',
    async (memberId) => {
      const { owner, audienceId } = await ownerWithAudience()
      expect(await statusAndBody(await removeMember(owner, audienceId, memberId))).toEqual(MEMBER_NOT_FOUND)
    },
  )
})

describe('members of a deleted audience', () => {
  it('are deleted with it', async () => {
    const { owner, audienceId } = await ownerWithAudience()
    await expectAdded(owner, audienceId, addresses(20), { inserted: 20, duplicates: 0 })
    const response = await app.request(`/audiences/${audienceId}`, { method: 'DELETE', key: owner.key })
    expect(response.status).toBe(200)
    expect(await storedMemberCount(audienceId)).toBe(0)
  })
})

/** The three member operations, each given an audience ID and a member ID. */
const memberOperations = [
  { name: 'GET members', call: (who: SeededAccount, id: number | string) => page(who, id) },
  {
    name: 'POST members',
    call: (who: SeededAccount, id: number | string) => add(who, id, [{ email: 'intruder@example.com' }]),
  },
  {
    name: 'DELETE member',
    call: (who: SeededAccount, id: number | string, memberId: number | string) =>
      removeMember(who, id, memberId),
  },
]

describe('another account’s audience', () => {
  it.each(memberOperations)(
    '$name answers 403 {error: "Access denied"} and changes nothing',
    async ({ call }) => {
      const { owner, audienceId } = await ownerWithAudience()
      const intruder = await seedAccount(app, { plan: 'pro' })
      await expectAdded(owner, audienceId, [{ email: 'ada@example.com' }], { inserted: 1, duplicates: 0 })
      const before = await allMembers(owner, audienceId)
      expect(await statusAndBody(await call(intruder, audienceId, before[0]?.id as number))).toEqual(
        ACCESS_DENIED,
      )
      expect(await allMembers(owner, audienceId)).toEqual(before)
    },
  )
})

describe('audience and member IDs', () => {
  it.each(memberOperations)(
    '$name on an audience that does not exist answers 404 {error: "Audience not found"}',
    async ({ call }) => {
      const { owner, audienceId } = await ownerWithAudience()
      await app.request(`/audiences/${audienceId}`, { method: 'DELETE', key: owner.key })
      for (const id of [audienceId, 2147483648, 99999999999]) {
        expect(await statusAndBody(await call(owner, id, 1)), `id ${id}`).toEqual(AUDIENCE_NOT_FOUND)
      }
    },
  )

  it.each(memberOperations)(
    '$name with a non-numeric audience ID answers 400 INVALID_ID',
    async ({ call }) => {
      const { owner } = await ownerWithAudience()
      for (const id of ['abc', '1.5', '-1']) {
        expect(await statusAndBody(await call(owner, id, 1)), `id ${id}`).toEqual(INVALID_ID)
      }
    },
  )

  it('DELETE member with a non-numeric member ID answers 400 INVALID_ID', async () => {
    const { owner, audienceId } = await ownerWithAudience()
    for (const memberId of ['abc', '1.5', '-1']) {
      expect(await statusAndBody(await removeMember(owner, audienceId, memberId)), memberId).toEqual(
        INVALID_ID,
      )
    }
  })
})

describe('checkBatchAudience (whether a batch may be sent to an audience)', () => {
  const invalidAudience = { code: 'INVALID_AUDIENCE', message: 'Invalid audience' }

  it('accepts the account’s audience with members', async () => {
    const { owner, audienceId } = await ownerWithAudience()
    await expectAdded(owner, audienceId, addresses(1), { inserted: 1, duplicates: 0 })
    await expect(checkBatchAudience(app.services.sql, owner.account.id, audienceId)).resolves.toBeUndefined()
  })

  it('refuses an audience that does not exist or is another account’s: 400 Invalid audience', async () => {
    const { owner, audienceId } = await ownerWithAudience()
    await expectAdded(owner, audienceId, addresses(1), { inserted: 1, duplicates: 0 })
    const intruder = await seedAccount(app, { plan: 'pro' })
    const sql = app.services.sql
    await expect(checkBatchAudience(sql, intruder.account.id, audienceId)).rejects.toMatchObject(
      invalidAudience,
    )
    for (const id of [audienceId + 1000, 2147483648]) {
      await expect(checkBatchAudience(sql, owner.account.id, id)).rejects.toMatchObject(invalidAudience)
    }
  })

  it('refuses an empty audience: 400 Audience has no members', async () => {
    const { owner, audienceId } = await ownerWithAudience()
    await expect(checkBatchAudience(app.services.sql, owner.account.id, audienceId)).rejects.toMatchObject({
      code: 'AUDIENCE_HAS_NO_MEMBERS',
      message: 'Audience has no members',
    })
  })
})
