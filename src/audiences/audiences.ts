import type { z } from 'zod'
import { isStorableId } from '../db/ids.ts'
import type { Db, Sql } from '../db/sql.ts'
import { ACCESS_DENIED, simpleError } from '../errors.ts'
import type {
  AudienceMemberInputSchema,
  AudienceMemberSchema,
  AudienceSchema,
  AudienceWithCountSchema,
  PaginationSchema,
} from '../generated/routes.ts'

/** An audience exactly as the contract shows it (create and update responses). */
export type Audience = z.infer<typeof AudienceSchema>
/** An audience with its `member_count` (list and get responses). */
export type AudienceWithCount = z.infer<typeof AudienceWithCountSchema>
export type AudienceMember = z.infer<typeof AudienceMemberSchema>
export type MemberInput = z.infer<typeof AudienceMemberInputSchema>
export type Pagination = z.infer<typeof PaginationSchema>

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

/** One recipient of a batch sent to an audience. */
export interface BatchRecipient {
  email: string
  payload: AudienceMember['payload']
}

const TEXT_OID = 25

const COLUMNS = (sql: Db) => sql`
  id, account_id as user_id, name, description, temporary::int as temporary,
  api_timestamp(created_at) as created_at, api_timestamp(updated_at) as updated_at`

const WITH_COUNT = (sql: Db) => sql`
  ${COLUMNS(sql)},
  (select count(*)::int from audience_members m where m.audience_id = audiences.id) as member_count`

const MEMBER_COLUMNS = (sql: Db) => sql`
  id, audience_id, email, payload, api_timestamp(created_at) as created_at`

export function listAudiences(sql: Sql, accountId: number): Promise<AudienceWithCount[]> {
  return sql<AudienceWithCount[]>`
    select ${WITH_COUNT(sql)} from audiences
    where account_id = ${accountId} and not temporary
    order by created_at desc, id desc`
}

export async function createAudience(
  sql: Sql,
  accountId: number,
  content: AudienceContent,
): Promise<Audience> {
  const [row] = await sql<Audience[]>`
    insert into audiences (account_id, name, description)
    values (${accountId}, ${content.name}, ${content.description ?? null})
    returning ${COLUMNS(sql)}`
  return row as Audience
}

/** The account's audience with its member count, or the specification's 404 / 403. */
export async function getAudience(sql: Sql, accountId: number, id: number): Promise<AudienceWithCount> {
  const [row] = isStorableId(id)
    ? await sql<AudienceWithCount[]>`select ${WITH_COUNT(sql)} from audiences where id = ${id}`
    : []
  return own(row, accountId)
}

export function updateAudience(
  sql: Sql,
  accountId: number,
  id: number,
  change: Partial<AudienceContent>,
): Promise<Audience> {
  return sql.begin(async (tx) => {
    const audience = await ownAudience(tx, accountId, id, 'for update')
    const [row] = await tx<Audience[]>`
      update audiences set name = ${change.name ?? audience.name},
        description = ${change.description ?? audience.description}, updated_at = now()
      where id = ${id}
      returning ${COLUMNS(tx)}`
    return row as Audience
  })
}

/** Deletes the audience; its members go with it (foreign key cascade). */
export async function deleteAudience(sql: Sql, accountId: number, id: number): Promise<void> {
  await ownAudience(sql, accountId, id)
  await sql`delete from audiences where id = ${id} and account_id = ${accountId}`
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
    const [{ total } = { total: 0 }] = await tx<{ total: number }[]>`
      select count(*)::int as total from audience_members where audience_id = ${id}`
    const members = await tx<AudienceMember[]>`
      select ${MEMBER_COLUMNS(tx)} from audience_members where audience_id = ${id}
      order by id limit ${page.limit} offset ${page.offset}`
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
    const [{ inserted } = { inserted: 0 }] = await tx<{ inserted: number }[]>`
      with added as (
        insert into audience_members (audience_id, email, payload)
        select ${id}, email, payload from (${firstOfEachAddress(tx, members)}) firsts order by ord
        on conflict (audience_id, lower(email)) do nothing
        returning 1
      )
      select count(*)::int as inserted from added`
    return { inserted, duplicates: members.length - inserted }
  })
}

export async function deleteMember(sql: Sql, accountId: number, id: number, memberId: number): Promise<void> {
  await ownAudience(sql, accountId, id)
  const deleted = isStorableId(memberId)
    ? await sql`delete from audience_members where id = ${memberId} and audience_id = ${id}`
    : { count: 0 }
  if (deleted.count === 0) throw simpleError(404, 'Member not found')
}

/**
 * The throwaway audience behind a `recipients` batch, with one member per distinct address
 * (case-insensitively, first spelling kept), made in one statement. Returns its id.
 */
export async function createTemporaryAudience(
  tx: Db,
  accountId: number,
  emails: string[],
  name?: string,
): Promise<number> {
  const members = firstOfEachAddress(
    tx,
    emails.map((email) => ({ email })),
  )
  const [row] = await tx<{ id: number }[]>`
    with audience as (
      insert into audiences (account_id, name, temporary)
      values (${accountId}, coalesce(${name ?? null}, 'Batch Send ' || api_timestamp(now())), true)
      returning id
    ), added as (
      insert into audience_members (audience_id, email)
      select audience.id, email from audience, (${members}) firsts
      order by ord
    )
    select id from audience`
  return (row as { id: number }).id
}

/**
 * The recipients of a batch sent to `audienceId`, in member order. The contract answers 400 here,
 * not 404 / 403: the audience is a field of the batch request, not the resource addressed.
 */
export async function audienceMembersForBatch(
  sql: Db,
  accountId: number,
  audienceId: number,
): Promise<BatchRecipient[]> {
  const [audience] = isStorableId(audienceId)
    ? await sql<{ account_id: number }[]>`select account_id from audiences where id = ${audienceId}`
    : []
  if (audience?.account_id !== accountId) throw simpleError(400, 'Invalid audience')
  const members = await sql<BatchRecipient[]>`
    select email, payload from audience_members where audience_id = ${audienceId} order by id`
  if (members.length === 0) throw simpleError(400, 'Audience has no members')
  return members
}

/** The audience row (without its count) after the ownership check, optionally locked. */
async function ownAudience(
  sql: Db,
  accountId: number,
  id: number,
  lock?: 'for update' | 'for key share',
): Promise<Audience> {
  const [row] = isStorableId(id)
    ? await sql<Audience[]>`
        select ${COLUMNS(sql)} from audiences where id = ${id} ${lock ? sql.unsafe(lock) : sql``}`
    : []
  return own(row, accountId)
}

function own<T extends Audience>(row: T | undefined, accountId: number): T {
  if (!row) throw simpleError(404, 'Audience not found')
  if (row.user_id !== accountId) throw simpleError(403, ACCESS_DENIED)
  return row
}

/**
 * `members` as rows (email, payload, ord), keeping the first occurrence of each address compared
 * case-insensitively, as the unique index compares them. Arrays keep it one parameter each
 * whatever the number of members.
 */
function firstOfEachAddress(sql: Db, members: MemberInput[]) {
  const emails = members.map((member) => member.email)
  const payloads = members.map((member) => (member.payload ? JSON.stringify(member.payload) : null))
  return sql`
    select distinct on (lower(email)) email, payload::jsonb as payload, ord
    from unnest(${sql.array(emails, TEXT_OID)}::text[], ${sql.array(payloads, TEXT_OID)}::text[])
      with ordinality as input(email, payload, ord)
    order by lower(email), ord`
}
