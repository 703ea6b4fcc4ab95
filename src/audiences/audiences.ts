import type { z } from 'zod'
import { AppError } from '../app-error.ts'
import {
  type AudienceRow,
  audienceById,
  audienceWithCount,
  countMembers,
  deleteAudiences,
  deleteMemberRow,
  hasMembers,
  insertAudience,
  insertMembers,
  insertTemporaryAudience,
  type MemberInput,
  memberById,
  memberPage,
  selectAudiences,
  selectMembers,
  updateAudienceRow,
} from '../db/audiences.ts'
import { isStorableId } from '../db/ids.ts'
import type { Db, Sql } from '../db/sql.ts'
import type { AudienceMemberSchema, AudienceWithCountSchema, PaginationSchema } from '../generated/routes.ts'

/** An audience exactly as the contract shows it (create and update responses). */
export type Audience = AudienceRow
/** An audience with its `member_count` (list and get responses). */
export type AudienceWithCount = z.infer<typeof AudienceWithCountSchema>
export type AudienceMember = z.infer<typeof AudienceMemberSchema>
export type Pagination = z.infer<typeof PaginationSchema>
export type { MemberInput }

export interface AudienceContent {
  name: string
  description?: string
}

export interface MemberPage {
  members: AudienceMember[]
  pagination: Pagination
}

export interface AddedMembers {
  inserted: number
  duplicates: number
}

export function listAudiences(db: Db, accountId: number): Promise<AudienceWithCount[]> {
  return selectAudiences(db, accountId)
}

export function createAudience(db: Db, accountId: number, content: AudienceContent): Promise<Audience> {
  return insertAudience(db, accountId, { name: content.name, description: content.description ?? null })
}

/** The account's audience with its member count, or the specification's 404 / 403. */
export async function getAudience(db: Db, accountId: number, id: number): Promise<AudienceWithCount> {
  return own(isStorableId(id) ? await audienceWithCount(db, id) : undefined, accountId)
}

export function updateAudience(
  sql: Sql,
  accountId: number,
  id: number,
  change: Partial<AudienceContent>,
): Promise<Audience> {
  return sql.begin(async (tx) => {
    const audience = await ownAudience(tx, accountId, id, 'for update')
    return updateAudienceRow(tx, id, {
      name: change.name ?? audience.name,
      description: change.description ?? audience.description,
    })
  })
}

/** Deletes the audience; its members go with it. */
export async function deleteAudience(db: Db, accountId: number, id: number): Promise<void> {
  await ownAudience(db, accountId, id)
  await deleteAudiences(db, [id])
}

export function listMembers(
  sql: Sql,
  accountId: number,
  id: number,
  page: { limit: number; offset: number },
): Promise<MemberPage> {
  // One snapshot, so that `total` and the page agree while members are being added.
  return sql.begin('isolation level repeatable read read only', async (tx) => {
    await ownAudience(tx, accountId, id)
    const total = await countMembers(tx, id)
    const members = await selectMembers(tx, id, page)
    const hasMore = page.offset + members.length < total
    return { members, pagination: { total, limit: page.limit, offset: page.offset, hasMore } }
  })
}

/**
 * Adds the members in one statement. An address already in the audience, or repeated earlier in
 * `members` (case-insensitively), is skipped and counted as a duplicate.
 */
export function addMembers(
  sql: Sql,
  accountId: number,
  id: number,
  members: MemberInput[],
): Promise<AddedMembers> {
  return sql.begin(async (tx) => {
    // Held until commit, so that a concurrent delete of the audience waits for the import.
    await ownAudience(tx, accountId, id, 'for key share')
    const inserted = await insertMembers(tx, id, members)
    return { inserted, duplicates: members.length - inserted }
  })
}

export async function getMember(
  db: Db,
  accountId: number,
  id: number,
  memberId: number,
): Promise<AudienceMember> {
  await ownAudience(db, accountId, id)
  const member = isStorableId(memberId) ? await memberById(db, id, memberId) : undefined
  if (!member) throw new AppError('MEMBER_NOT_FOUND')
  return member
}

export async function deleteMember(db: Db, accountId: number, id: number, memberId: number): Promise<void> {
  await ownAudience(db, accountId, id)
  if (!(isStorableId(memberId) && (await deleteMemberRow(db, id, memberId))))
    throw new AppError('MEMBER_NOT_FOUND')
}

/**
 * The throwaway audience behind a `recipients` batch (named as the batch), with one member per
 * distinct address. Returns its id.
 */
export function createTemporaryAudience(
  tx: Db,
  accountId: number,
  emails: string[],
  name: string,
): Promise<number> {
  return insertTemporaryAudience(tx, accountId, emails, name)
}

/**
 * Checks that a batch may be sent to `audienceId`: the account's, with members. The contract
 * answers 400 here, not 404 / 403: the audience is a field of the batch request, not the
 * resource addressed. The members themselves never come into the process: the batch's records
 * are made from them inside PostgreSQL.
 */
export async function checkBatchAudience(db: Db, accountId: number, audienceId: number): Promise<void> {
  const audience = isStorableId(audienceId) ? await audienceById(db, audienceId) : undefined
  if (audience?.user_id !== accountId) throw new AppError('INVALID_AUDIENCE')
  if (!(await hasMembers(db, audienceId))) throw new AppError('AUDIENCE_HAS_NO_MEMBERS')
}

/** The audience row (without its count) after the ownership check, optionally locked. */
async function ownAudience(
  db: Db,
  accountId: number,
  id: number,
  lock?: 'for update' | 'for key share',
): Promise<Audience> {
  return own(isStorableId(id) ? await audienceById(db, id, lock) : undefined, accountId)
}

function own<T extends Audience>(row: T | undefined, accountId: number): T {
  if (!row) throw new AppError('AUDIENCE_NOT_FOUND')
  if (row.user_id !== accountId) throw new AppError('ACCESS_DENIED')
  return row
}

/** Members on one page of the dashboard. */
export const MEMBER_PAGE_SIZE = 50

/** A page of the audience's members, in the order they were added, optionally only those whose address contains `search`. */
export async function browseMembers(
  sql: Sql,
  accountId: number,
  id: number,
  query: { search?: string | undefined; after?: number | undefined },
): Promise<{ members: AudienceMember[]; more: number | undefined }> {
  await getAudience(sql, accountId, id)
  const rows = await memberPage(sql, id, { ...query, limit: MEMBER_PAGE_SIZE + 1 })
  const members = rows.slice(0, MEMBER_PAGE_SIZE)
  return { members, more: rows.length > MEMBER_PAGE_SIZE ? members.at(-1)?.id : undefined }
}
