/**
 * Requests to the /audiences operations and their members as one account or another, and what
 * their answers should be.
 */
import { expect } from 'vitest'
import type {
  Audience,
  AudienceMember,
  AudienceWithCount,
  MemberInput,
} from '../../src/audiences/audiences.ts'
import { type SeededAccount, seedAccount, type TestApp } from './app.ts'
import { humanText, TIMESTAMP } from './matchers.ts'

export const content = { name: 'Customers', description: 'Everyone with an active subscription' }

export const ACCESS_DENIED = { status: 403, body: { error: 'Access denied' } }
export const AUDIENCE_NOT_FOUND = { status: 404, body: { error: 'Audience not found' } }
export const MEMBER_NOT_FOUND = { status: 404, body: { error: 'Member not found' } }
export const INVALID_ID = { status: 400, body: { code: 'INVALID_ID', message: humanText } }

export async function statusAndBody(response: Response) {
  return { status: response.status, body: await response.json() }
}

/** The audience the API should return for `owner`, with generated fields matched by shape. */
export function expectedAudience(owner: SeededAccount, fields: Partial<AudienceWithCount>) {
  return {
    id: expect.any(Number),
    user_id: owner.account.id,
    name: content.name,
    description: null,
    temporary: 0,
    created_at: expect.stringMatching(TIMESTAMP),
    updated_at: expect.stringMatching(TIMESTAMP),
    ...fields,
  }
}

export function addresses(count: number, prefix = 'member'): MemberInput[] {
  return Array.from({ length: count }, (_, i) => ({ email: `${prefix}${i}@example.com` }))
}

/** The /audiences requests of a test file's app. */
export function audienceRequests(app: TestApp) {
  function pro() {
    return seedAccount(app, { plan: 'pro' })
  }

  function create(who: SeededAccount, body: unknown = content) {
    return app.request('/audiences', { method: 'POST', key: who.key, body })
  }

  function list(who: SeededAccount) {
    return app.request('/audiences', { key: who.key })
  }

  function get(who: SeededAccount, id: number | string) {
    return app.request(`/audiences/${id}`, { key: who.key })
  }

  function put(who: SeededAccount, id: number | string, body: unknown) {
    return app.request(`/audiences/${id}`, { method: 'PUT', key: who.key, body })
  }

  function remove(who: SeededAccount, id: number | string) {
    return app.request(`/audiences/${id}`, { method: 'DELETE', key: who.key })
  }

  async function createOk(owner: SeededAccount, body: Record<string, unknown> = content): Promise<Audience> {
    const result = await statusAndBody(await create(owner, body))
    expect(result.status).toBe(201)
    return result.body.audience as Audience
  }

  async function addMembers(owner: SeededAccount, id: number, emails: string[]) {
    const members = emails.map((email) => ({ email }))
    const response = await app.request(`/audiences/${id}/members`, { key: owner.key, body: { members } })
    expect(response.status).toBe(201)
  }

  /** `owner` still reads `audience` as it was (with its member count). */
  async function expectUnchanged(owner: SeededAccount, audience: Audience, memberCount = 0) {
    expect(await statusAndBody(await get(owner, audience.id))).toEqual({
      status: 200,
      body: { success: true, audience: { ...audience, member_count: memberCount } },
    })
  }

  return { pro, create, list, get, put, remove, createOk, addMembers, expectUnchanged }
}

/** The requests on an audience's members of a test file's app. */
export function memberRequests(app: TestApp) {
  /** A Pro account with one audience of its own. */
  async function ownerWithAudience(): Promise<{ owner: SeededAccount; audienceId: number }> {
    const owner = await seedAccount(app, { plan: 'pro' })
    const response = await app.request('/audiences', { key: owner.key, body: { name: 'Customers' } })
    expect(response.status).toBe(201)
    return { owner, audienceId: (await response.json()).audience.id }
  }

  function add(who: SeededAccount, audienceId: number | string, members: unknown) {
    return app.request(`/audiences/${audienceId}/members`, { key: who.key, body: { members } })
  }

  function page(who: SeededAccount, audienceId: number | string, query = '') {
    return app.request(`/audiences/${audienceId}/members${query}`, { key: who.key })
  }

  function removeMember(who: SeededAccount, audienceId: number | string, memberId: number | string) {
    return app.request(`/audiences/${audienceId}/members/${memberId}`, { method: 'DELETE', key: who.key })
  }

  async function expectAdded(
    who: SeededAccount,
    audienceId: number,
    members: unknown[],
    counts: { inserted: number; duplicates: number },
  ) {
    expect(await statusAndBody(await add(who, audienceId, members))).toEqual({
      status: 201,
      body: { success: true, ...counts, message: humanText },
    })
  }

  /** Every member of the audience, read through the API in one page. */
  async function allMembers(who: SeededAccount, audienceId: number): Promise<AudienceMember[]> {
    const { members, pagination } = await (await page(who, audienceId, '?limit=1000')).json()
    expect(pagination.hasMore).toBe(false)
    return members
  }

  async function storedMemberCount(audienceId: number): Promise<number> {
    const [row] = await app.services.sql<{ count: number }[]>`
      select count(*)::int as count from audience_members where audience_id = ${audienceId}`
    return row?.count ?? -1
  }

  return { ownerWithAudience, add, page, removeMember, expectAdded, allMembers, storedMemberCount }
}
