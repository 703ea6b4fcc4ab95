import type { Db, Fragment } from './sql.ts'

/** The audiences and audience_members tables. */

/** A member's free-form variables, as stored (JSON object, or null). */
export type Payload = { [key: string]: unknown } | null

export interface AudienceRow {
  id: number
  user_id: number
  name: string
  description: string | null
  temporary: number
  created_at: string
  updated_at: string
}

export type AudienceWithCountRow = AudienceRow & { member_count: number }

export interface MemberRow {
  id: number
  audience_id: number
  email: string
  payload: Payload
  created_at: string
}

export interface MemberInput {
  email: string
  payload?: Payload | undefined
}

const TEXT_OID = 25

const COLUMNS = (db: Db) => db`
  id, account_id as user_id, name, description, temporary::int as temporary,
  api_timestamp(created_at) as created_at, api_timestamp(updated_at) as updated_at`

const WITH_COUNT = (db: Db) => db`
  ${COLUMNS(db)},
  (select count(*)::int from audience_members m where m.audience_id = audiences.id) as member_count`

const MEMBER_COLUMNS = (db: Db) =>
  db`id, audience_id, email, payload, api_timestamp(created_at) as created_at`

/** The account's lasting audiences, newest first. */
export function selectAudiences(db: Db, accountId: number): Promise<AudienceWithCountRow[]> {
  return db<AudienceWithCountRow[]>`
    select ${WITH_COUNT(db)} from audiences
    where account_id = ${accountId} and not temporary
    order by created_at desc, id desc`
}

export async function insertAudience(
  db: Db,
  accountId: number,
  content: { name: string; description: string | null },
): Promise<AudienceRow> {
  const [row] = await db<AudienceRow[]>`
    insert into audiences (account_id, name, description)
    values (${accountId}, ${content.name}, ${content.description})
    returning ${COLUMNS(db)}`
  if (!row) throw new Error('the audience was not recorded')
  return row
}

export async function audienceWithCount(db: Db, id: number): Promise<AudienceWithCountRow | undefined> {
  const [row] = await db<AudienceWithCountRow[]>`select ${WITH_COUNT(db)} from audiences where id = ${id}`
  return row
}

/** The audience row, optionally locked for the caller's transaction. */
export async function audienceById(
  db: Db,
  id: number,
  lock?: 'for update' | 'for key share',
): Promise<AudienceRow | undefined> {
  const [row] = await db<AudienceRow[]>`
    select ${COLUMNS(db)} from audiences where id = ${id} ${lock ? db.unsafe(lock) : db``}`
  return row
}

export async function updateAudienceRow(
  db: Db,
  id: number,
  content: { name: string; description: string | null },
): Promise<AudienceRow> {
  const [row] = await db<AudienceRow[]>`
    update audiences set name = ${content.name}, description = ${content.description},
      updated_at = case when (name, description) is distinct from (${content.name}, ${content.description}::text)
        then mailroom_now() else updated_at end
    where id = ${id}
    returning ${COLUMNS(db)}`
  if (!row) throw new Error(`audience ${id} vanished while locked`)
  return row
}

/** Deletes audiences; their members go with them (foreign key cascade). */
export async function deleteAudiences(db: Db, ids: number[]): Promise<void> {
  if (ids.length) await db`delete from audiences where id = any(${ids}::int[])`
}

export async function countMembers(db: Db, audienceId: number): Promise<number> {
  const [row] = await db<{ total: number }[]>`
    select count(*)::int as total from audience_members where audience_id = ${audienceId}`
  return row?.total ?? 0
}

export function selectMembers(
  db: Db,
  audienceId: number,
  page: { limit: number; offset: number },
): Promise<MemberRow[]> {
  return db<MemberRow[]>`
    select ${MEMBER_COLUMNS(db)} from audience_members where audience_id = ${audienceId}
    order by id limit ${page.limit} offset ${page.offset}`
}

/** An audience's members in the order added, searched, `limit` of those after `after`. */
export function memberPage(
  db: Db,
  audienceId: number,
  page: { search?: string | undefined; after?: number | undefined; limit: number },
): Promise<MemberRow[]> {
  const search = page.search ? db`and email ilike ${`%${page.search.replace(/[\\%_]/g, '\\$&')}%`}` : db``
  const after = page.after === undefined ? db`` : db`and id > ${page.after}`
  return db<MemberRow[]>`
    select ${MEMBER_COLUMNS(db)} from audience_members where audience_id = ${audienceId} ${search} ${after}
    order by id limit ${page.limit}`
}

/**
 * Adds the members in one statement; an address already in the audience, or repeated earlier
 * in `members` (case-insensitively), is skipped. Returns how many were inserted.
 */
export async function insertMembers(db: Db, audienceId: number, members: MemberInput[]): Promise<number> {
  const [row] = await db<{ inserted: number }[]>`
    with added as (
      insert into audience_members (audience_id, email, payload)
      select ${audienceId}, email, payload from (${firstOfEachAddress(db, members)}) firsts order by ord
      on conflict (audience_id, lower(email)) do nothing
      returning 1
    )
    select count(*)::int as inserted from added`
  return row?.inserted ?? 0
}

/** One member of the audience, when it has that member. */
export async function memberById(
  db: Db,
  audienceId: number,
  memberId: number,
): Promise<MemberRow | undefined> {
  const [row] = await db<MemberRow[]>`
    select ${MEMBER_COLUMNS(db)} from audience_members where id = ${memberId} and audience_id = ${audienceId}`
  return row
}

/** Whether a member was deleted. */
export async function deleteMemberRow(db: Db, audienceId: number, memberId: number): Promise<boolean> {
  const deleted =
    await db`delete from audience_members where id = ${memberId} and audience_id = ${audienceId}`
  return deleted.count > 0
}

/**
 * The throwaway audience behind a `recipients` batch, with one member per distinct address
 * (case-insensitively, first spelling kept), made in one statement. Returns its id.
 */
export async function insertTemporaryAudience(
  tx: Db,
  accountId: number,
  emails: string[],
  name: string,
): Promise<number> {
  const members = firstOfEachAddress(
    tx,
    emails.map((email) => ({ email })),
  )
  const [row] = await tx<{ id: number }[]>`
    with audience as (
      insert into audiences (account_id, name, temporary) values (${accountId}, ${name}, true)
      returning id
    ), added as (
      insert into audience_members (audience_id, email)
      select audience.id, email from audience, (${members}) firsts
      order by ord
    )
    select id from audience`
  if (!row) throw new Error('the temporary audience was not recorded')
  return row.id
}

/** Whether the audience has at least one member. */
export async function hasMembers(db: Db, audienceId: number): Promise<boolean> {
  const [row] = await db<{ any: boolean }[]>`
    select exists (select 1 from audience_members where audience_id = ${audienceId}) as any`
  return row?.any ?? false
}

/** What signing the members' unsubscribe links takes (see audiences/unsubscribe.ts). */
export interface MemberLinkSigning {
  audienceId: number
  /** The link up to the signature: `<public URL>/unsubscribe/<audience>.` (the member id follows). */
  prefix: string
  /** The signing key, zero-padded to SHA-256's block and XORed with HMAC's inner and outer pads. */
  innerPad: Buffer
  outerPad: Buffer
}

/**
 * The audience's members (email, payload, id) as a subquery, for a statement that copies them
 * inside PostgreSQL (a batch's recipients) instead of bringing them into the process.
 */
export function membersOf(db: Db, audienceId: number): Fragment {
  return db`select email, payload, id from audience_members where audience_id = ${audienceId}`
}

/**
 * The one-click unsubscribe link of the member whose id `memberId` (an SQL expression) yields,
 * signed inside PostgreSQL as unsubscribeToken signs it in the process.
 */
export function memberLink(db: Db, links: MemberLinkSigning, memberId: Fragment): Fragment {
  const signature = db`sha256(${links.outerPad}::bytea || sha256(${links.innerPad}::bytea
    || convert_to(${String(links.audienceId)}::text || '.' || ${memberId}, 'UTF8')))`
  // base64url without padding, as Node's 'base64url' writes it.
  return db`${links.prefix}::text || ${memberId} || '.' || translate(encode(${signature}, 'base64'), '+/=', '-_')`
}

/**
 * `members` as rows (email, payload, ord), keeping the first occurrence of each address compared
 * case-insensitively, as the unique index compares them. Arrays keep it one parameter each
 * whatever the number of members.
 */
function firstOfEachAddress(db: Db, members: MemberInput[]): Fragment {
  const emails = members.map((member) => member.email)
  const payloads = members.map((member) => (member.payload ? JSON.stringify(member.payload) : null))
  return db`
    select distinct on (lower(email)) email, payload::jsonb as payload, ord
    from unnest(${db.array(emails, TEXT_OID)}::text[], ${db.array(payloads, TEXT_OID)}::text[])
      with ordinality as input(email, payload, ord)
    order by lower(email), ord`
}
