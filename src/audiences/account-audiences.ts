import { memberPage } from '../db/audiences.ts'
import type { Sql } from '../db/sql.ts'
import { type AddedMembers, type AudienceMember, addMembers, getAudience } from './audiences.ts'
import { MAX_MEMBER_LINES, type ReadMembers } from './member-lines.ts'

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

/** Adds members read from text or a file, as many at a time as one API request takes. */
export async function importMembers(
  sql: Sql,
  accountId: number,
  id: number,
  read: ReadMembers,
): Promise<AddedMembers> {
  const added = { inserted: 0, duplicates: 0 }
  await getAudience(sql, accountId, id)
  for (let start = 0; start < read.members.length; start += MAX_MEMBER_LINES) {
    const chunk = await addMembers(sql, accountId, id, read.members.slice(start, start + MAX_MEMBER_LINES))
    added.inserted += chunk.inserted
    added.duplicates += chunk.duplicates
  }
  return added
}
