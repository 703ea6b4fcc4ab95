import { describe, expect, it } from 'vitest'
import { useTestApp } from '../../support/app.ts'
import { addresses, memberRequests, statusAndBody } from '../../support/audiences.ts'
import { TIMESTAMP, validationBody } from '../../support/matchers.ts'

const app = useTestApp()
const { ownerWithAudience, add, page, expectAdded, allMembers, storedMemberCount } = memberRequests(app)

describe('POST /audiences/{id}/members', () => {
  it('answers 201 {success, inserted, duplicates, message}; members list in the order given', async () => {
    const { owner, audienceId } = await ownerWithAudience()
    await expectAdded(
      owner,
      audienceId,
      [{ email: 'ada@example.com', payload: { first_name: 'Ada' } }, { email: 'grace@example.com' }],
      { inserted: 2, duplicates: 0 },
    )
    expect(await statusAndBody(await page(owner, audienceId))).toEqual({
      status: 200,
      body: {
        success: true,
        members: [
          {
            id: expect.any(Number),
            audience_id: audienceId,
            email: 'ada@example.com',
            payload: { first_name: 'Ada' },
            created_at: expect.stringMatching(TIMESTAMP),
          },
          {
            id: expect.any(Number),
            audience_id: audienceId,
            email: 'grace@example.com',
            payload: null,
            created_at: expect.stringMatching(TIMESTAMP),
          },
        ],
        pagination: { total: 2, limit: 100, offset: 0, hasMore: false },
      },
    })
  })

  it('counts addresses already in the audience as duplicates, case-insensitively, and keeps them as they were', async () => {
    const { owner, audienceId } = await ownerWithAudience()
    await expectAdded(owner, audienceId, [{ email: 'Ada@Example.com', payload: { v: 1 } }], {
      inserted: 1,
      duplicates: 0,
    })
    await expectAdded(
      owner,
      audienceId,
      [
        { email: 'ada@example.com', payload: { v: 2 } },
        { email: 'ADA@EXAMPLE.COM' },
        { email: 'grace@example.com' },
      ],
      { inserted: 1, duplicates: 2 },
    )
    const members = await allMembers(owner, audienceId)
    expect(members.map(({ email, payload }) => ({ email, payload }))).toEqual([
      { email: 'Ada@Example.com', payload: { v: 1 } },
      { email: 'grace@example.com', payload: null },
    ])
  })

  it('counts an address repeated within one request as a duplicate; the first occurrence wins', async () => {
    const { owner, audienceId } = await ownerWithAudience()
    await expectAdded(
      owner,
      audienceId,
      [
        { email: 'Grace@Example.com', payload: { first: true } },
        { email: 'ada@example.com' },
        { email: 'grace@example.com', payload: { first: false } },
        { email: 'GRACE@EXAMPLE.COM' },
      ],
      { inserted: 2, duplicates: 2 },
    )
    const members = await allMembers(owner, audienceId)
    expect(members.map(({ email, payload }) => ({ email, payload }))).toEqual([
      { email: 'Grace@Example.com', payload: { first: true } },
      { email: 'ada@example.com', payload: null },
    ])
  })

  it('the same address in two audiences is two members', async () => {
    const { owner, audienceId } = await ownerWithAudience()
    const other = await app.request('/audiences', { key: owner.key, body: { name: 'Other' } })
    const otherId = (await other.json()).audience.id
    await expectAdded(owner, audienceId, [{ email: 'ada@example.com' }], { inserted: 1, duplicates: 0 })
    await expectAdded(owner, otherId, [{ email: 'ada@example.com' }], { inserted: 1, duplicates: 0 })
  })

  it('round-trips payloads: nested objects, arrays, numbers, booleans and nulls; no payload is null', async () => {
    const { owner, audienceId } = await ownerWithAudience()
    const nested = {
      first_name: 'Ada',
      plan: { name: 'pro', seats: 3, renews: null, tags: ['a', 'b'] },
      score: 1.5,
      active: true,
      'Case Sensitive': 'kept',
    }
    await expectAdded(
      owner,
      audienceId,
      [
        { email: 'ada@example.com', payload: nested },
        { email: 'grace@example.com', payload: {} },
        { email: 'alan@example.com' },
      ],
      { inserted: 3, duplicates: 0 },
    )
    const members = await allMembers(owner, audienceId)
    expect(members.map((member) => member.payload)).toEqual([nested, {}, null])
  })

  it('refuses a payload key named __proto__, as written or escaped, anywhere: never drops it', async () => {
    const { owner, audienceId } = await ownerWithAudience()
    const proto = (spelled: string, payload: string) =>
      app.request(`/audiences/${audienceId}/members`, {
        key: owner.key,
        body: `{"members":[{"email":"ok@example.com"},{"email":"p@example.com","payload":${payload.replace('KEY', spelled)}}]}`,
      })
    for (const [payload, path] of [
      ['{KEY:"v"}', ['members', 1, 'payload', '__proto__']],
      ['{"plan":{"tags":[{KEY:{"admin":true}}]}}', ['members', 1, 'payload', 'plan', 'tags', 0, '__proto__']],
    ] as const) {
      for (const spelled of ['"__proto__"', '"\\u005f_proto__"']) {
        const response = await proto(spelled, payload)
        expect(await statusAndBody(response)).toEqual({
          status: 400,
          body: validationBody([{ path: [...path], code: 'custom' }]),
        })
      }
    }
    expect(await storedMemberCount(audienceId)).toBe(0)
    // Other keys that name Object.prototype's members are kept as they are.
    const kept = { constructor: 'c', toString: 't', hasOwnProperty: 'h', proto: 'p' }
    await expectAdded(owner, audienceId, [{ email: 'p@example.com', payload: kept }], {
      inserted: 1,
      duplicates: 0,
    })
    expect((await allMembers(owner, audienceId))[0]?.payload).toEqual(kept)
  })

  it('accepts 10000 members in one request', async () => {
    const { owner, audienceId } = await ownerWithAudience()
    await expectAdded(owner, audienceId, addresses(10_000), { inserted: 10_000, duplicates: 0 })
    const { pagination } = await (await page(owner, audienceId)).json()
    expect(pagination).toEqual({ total: 10_000, limit: 100, offset: 0, hasMore: true })
  })

  it.each([
    { case: '0 members', members: [], path: ['members'], code: 'too_small' },
    { case: '10001 members', members: addresses(10_001), path: ['members'], code: 'too_big' },
    { case: 'members not an array', members: 'ada@example.com', path: ['members'], code: 'invalid_type' },
    {
      case: 'an invalid email',
      members: [{ email: 'ada@example.com' }, { email: 'not an email' }],
      path: ['members', 1, 'email'],
      code: 'invalid_format',
    },
    {
      case: 'a member without email',
      members: [{ payload: { a: 1 } }],
      path: ['members', 0, 'email'],
      code: 'invalid_type',
    },
    {
      case: 'a payload that is not an object',
      members: [{ email: 'ada@example.com', payload: 'vip' }],
      path: ['members', 0, 'payload'],
      code: 'invalid_type',
    },
  ])('$case: 400 with the validation body, nothing added', async ({ members, path, code }) => {
    const { owner, audienceId } = await ownerWithAudience()
    expect(await statusAndBody(await add(owner, audienceId, members))).toEqual({
      status: 400,
      body: validationBody([{ path, code }]),
    })
    expect(await storedMemberCount(audienceId)).toBe(0)
  })

  it('members is required', async () => {
    const { owner, audienceId } = await ownerWithAudience()
    const response = await app.request(`/audiences/${audienceId}/members`, { key: owner.key, body: {} })
    expect(await statusAndBody(response)).toEqual({
      status: 400,
      body: validationBody([{ path: ['members'], code: 'invalid_type' }]),
    })
  })
})
