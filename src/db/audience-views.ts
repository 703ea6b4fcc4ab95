import type { MemberRow } from './audiences.ts'
import type { Db } from './sql.ts'

/** An audience's members as the dashboard lists them: in the order added, searched, a keyset page at a time. */
export function memberPage(
  db: Db,
  audienceId: number,
  page: { search?: string | undefined; after?: number | undefined; limit: number },
): Promise<MemberRow[]> {
  const search = page.search ? db`and email ilike ${`%${page.search.replace(/[\\%_]/g, '\\$&')}%`}` : db``
  const after = page.after === undefined ? db`` : db`and id > ${page.after}`
  return db<MemberRow[]>`
    select id, audience_id, email, payload, api_timestamp(created_at) as created_at
    from audience_members where audience_id = ${audienceId} ${search} ${after}
    order by id limit ${page.limit}`
}
