import { describe, expect, it } from 'vitest'
import { type SeededAccount, seedAccount, useTestApp } from '../../support/app.ts'
import { humanText, TIMESTAMP, validationBody } from '../../support/matchers.ts'

const app = useTestApp()

const post = (owner: SeededAccount, body: unknown) => app.request('/suppressions', { key: owner.key, body })
const get = (owner: SeededAccount, email: string) =>
  app.request(`/suppressions/${encodeURIComponent(email)}`, { key: owner.key })
const remove = (owner: SeededAccount, email: string) =>
  app.request(`/suppressions/${encodeURIComponent(email)}`, { key: owner.key, method: 'DELETE' })
const list = (owner: SeededAccount, query = '') => app.request(`/suppressions${query}`, { key: owner.key })

async function answer(response: Response) {
  return { status: response.status, body: await response.json() }
}

const addresses = (n: number, prefix = 'a') =>
  Array.from({ length: n }, (_, i) => `${prefix}${i}@example.com`)

const manual = (email: string, scope = 'all') => ({
  email,
  reason: 'manual',
  scope,
  detail: null,
  source: { type: 'api', id: null },
  created_at: expect.stringMatching(TIMESTAMP),
})

describe('POST /suppressions', () => {
  it('answers 201 {success, inserted, existing}: new addresses inserted, suppressed ones (any case) existing', async () => {
    const owner = await seedAccount(app)
    expect(await answer(await post(owner, { emails: ['ada@example.com'] }))).toEqual({
      status: 201,
      body: { success: true, inserted: 1, existing: 0 },
    })
    expect(
      await answer(await post(owner, { emails: ['ADA@Example.com', 'bob@example.com', 'Bob@example.com'] })),
    ).toEqual({ status: 201, body: { success: true, inserted: 1, existing: 1 } })
    expect(await answer(await get(owner, 'ada@example.com'))).toEqual({
      status: 200,
      body: { success: true, suppression: manual('ada@example.com') },
    })
  })

  it('takes scope marketing, and scope all widens a marketing entry', async () => {
    const owner = await seedAccount(app)
    await post(owner, { emails: ['m@example.com'], scope: 'marketing' })
    expect((await answer(await get(owner, 'm@example.com'))).body.suppression).toEqual(
      manual('m@example.com', 'marketing'),
    )
    expect((await answer(await post(owner, { emails: ['m@example.com'], scope: 'all' }))).body).toEqual({
      success: true,
      inserted: 1,
      existing: 0,
    })
    expect((await answer(await get(owner, 'm@example.com'))).body.suppression.scope).toBe('all')
    // Narrowing is not stronger: the entry stays as it is.
    expect((await answer(await post(owner, { emails: ['m@example.com'], scope: 'marketing' }))).body).toEqual(
      {
        success: true,
        inserted: 0,
        existing: 1,
      },
    )
  })

  it('takes 1 and 1000 addresses; 0, 1001 or a bad address answer the validation body', async () => {
    const owner = await seedAccount(app)
    expect(await answer(await post(owner, { emails: addresses(1000) }))).toEqual({
      status: 201,
      body: { success: true, inserted: 1000, existing: 0 },
    })
    expect(await answer(await post(owner, { emails: [] }))).toEqual({
      status: 400,
      body: validationBody([{ path: ['emails'], code: 'too_small' }]),
    })
    expect(await answer(await post(owner, { emails: addresses(1001, 'b') }))).toEqual({
      status: 400,
      body: validationBody([{ path: ['emails'], code: 'too_big' }]),
    })
    expect(await answer(await post(owner, { emails: ['ok@example.com', 'not an address'] }))).toEqual({
      status: 400,
      body: validationBody([{ path: ['emails', 1], code: 'invalid_format' }]),
    })
    expect(
      await answer(await post(owner, { emails: ['ok@example.com'], scope: 'transactional' })),
    ).toMatchObject({
      status: 400,
      body: { success: false },
    })
    expect((await answer(await get(owner, 'ok@example.com'))).status).toBe(404)
  })
})

describe('GET and DELETE /suppressions/{email}', () => {
  it('an address not suppressed answers 404 SUPPRESSION_NOT_FOUND in the standard shape', async () => {
    const owner = await seedAccount(app)
    const notFound = { status: 404, body: { code: 'SUPPRESSION_NOT_FOUND', message: humanText } }
    expect(await answer(await get(owner, 'nobody@example.com'))).toEqual(notFound)
    expect(await answer(await remove(owner, 'nobody@example.com'))).toEqual(notFound)
  })

  it('finds the address URL-encoded in any case; DELETE removes it', async () => {
    const owner = await seedAccount(app)
    await post(owner, { emails: ['Carol+news@example.com'] })
    expect((await answer(await get(owner, 'carol+NEWS@EXAMPLE.com'))).body.suppression.email).toBe(
      'Carol+news@example.com',
    )
    expect(await answer(await remove(owner, 'CAROL+news@example.com'))).toEqual({
      status: 200,
      body: { success: true, message: humanText },
    })
    expect((await answer(await get(owner, 'Carol+news@example.com'))).status).toBe(404)
    expect((await answer(await remove(owner, 'Carol+news@example.com'))).status).toBe(404)
  })

  it('a path that is not an address answers the validation body', async () => {
    const owner = await seedAccount(app)
    for (const response of [await get(owner, 'not-an-address'), await remove(owner, 'not-an-address')]) {
      expect(await answer(response)).toEqual({
        status: 400,
        body: validationBody([{ path: ['email'], code: 'invalid_format' }]),
      })
    }
  })
})

describe('GET /suppressions', () => {
  it('lists newest first, 100 by default, in pages that follow the cursor to the end', async () => {
    const owner = await seedAccount(app)
    for (const email of addresses(3, 'p')) await post(owner, { emails: [email] })
    const whole = await answer(await list(owner))
    expect(whole).toEqual({
      status: 200,
      body: {
        success: true,
        suppressions: ['p2@example.com', 'p1@example.com', 'p0@example.com'].map((e) => manual(e)),
        pagination: { limit: 100, hasMore: false, nextCursor: null },
      },
    })
    const first = (await answer(await list(owner, '?limit=2'))).body
    expect(first.suppressions.map((s: { email: string }) => s.email)).toEqual([
      'p2@example.com',
      'p1@example.com',
    ])
    expect(first.pagination).toEqual({ limit: 2, hasMore: true, nextCursor: expect.any(String) })
    const second = (await answer(await list(owner, `?limit=2&cursor=${first.pagination.nextCursor}`))).body
    expect(second.suppressions.map((s: { email: string }) => s.email)).toEqual(['p0@example.com'])
    expect(second.pagination).toEqual({ limit: 2, hasMore: false, nextCursor: null })
  })

  it('filters by reason and by a prefix of the address, compared case-insensitively', async () => {
    const owner = await seedAccount(app)
    await post(owner, { emails: ['Dora@example.com', 'dan@example.com', 'eve@example.com'] })
    const prefixed = (await answer(await list(owner, '?email=DO'))).body
    expect(prefixed.suppressions.map((s: { email: string }) => s.email)).toEqual(['Dora@example.com'])
    // A prefix is text, not a pattern.
    expect((await answer(await list(owner, '?email=d%25'))).body.suppressions).toEqual([])
    expect((await answer(await list(owner, '?reason=manual'))).body.suppressions).toHaveLength(3)
    expect((await answer(await list(owner, '?reason=hard_bounce'))).body.suppressions).toEqual([])
  })

  it('takes limit 1 and 1000; 0, 1001, an unknown reason or a cursor it did not give answer the validation body', async () => {
    const owner = await seedAccount(app)
    await post(owner, { emails: ['x@example.com', 'y@example.com'] })
    expect((await answer(await list(owner, '?limit=1'))).body.suppressions).toHaveLength(1)
    expect((await answer(await list(owner, '?limit=1000'))).body.pagination).toEqual({
      limit: 1000,
      hasMore: false,
      nextCursor: null,
    })
    for (const [query, path, code] of [
      ['?limit=0', 'limit', 'too_small'],
      ['?limit=1001', 'limit', 'too_big'],
      ['?reason=bounced', 'reason', 'invalid_value'],
      ['?cursor=zzz', 'cursor', 'custom'],
    ] as const) {
      expect(await answer(await list(owner, query)), query).toEqual({
        status: 400,
        body: validationBody([{ path: [path], code }]),
      })
    }
  })

  it('shows only the caller’s own entries', async () => {
    const owner = await seedAccount(app)
    const other = await seedAccount(app)
    await post(other, { emails: ['theirs@example.com'] })
    expect((await answer(await list(owner))).body.suppressions).toEqual([])
    expect((await answer(await get(owner, 'theirs@example.com'))).status).toBe(404)
    expect((await answer(await remove(owner, 'theirs@example.com'))).status).toBe(404)
    expect((await answer(await get(other, 'theirs@example.com'))).status).toBe(200)
  })
})
