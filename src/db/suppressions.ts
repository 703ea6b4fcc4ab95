import type { Db, Fragment } from './sql.ts'

/** The suppressions table: addresses an account no longer mails. */

export interface SuppressionRow {
  email: string
  reason: 'hard_bounce' | 'complaint' | 'unsubscribe' | 'manual'
  scope: 'all' | 'marketing'
  detail: string | null
  source: { type: 'email' | 'page' | 'api' | 'dashboard' | 'operator'; id: number | null }
  created_at: string
}

/** An entry to add; `strength` is `suppressionStrength`'s, which decides whether it replaces one. */
export interface NewSuppression {
  email: string
  reason: SuppressionRow['reason']
  scope: SuppressionRow['scope']
  strength: number
  detail: string | null
  sourceType: SuppressionRow['source']['type']
  sourceId: number | null
}

const COLUMNS = (db: Db) => db`
  email, reason, scope, detail, json_build_object('type', source_type, 'id', source_id) as source,
  api_timestamp(created_at) as created_at`

export interface SuppressionFilter {
  reason?: SuppressionRow['reason'] | undefined
  prefix?: string | undefined
}

/** One page, newest first: `size` entries older than `before`, and the ID of the last if more follow. */
export async function selectSuppressions(
  db: Db,
  accountId: number,
  filter: SuppressionFilter,
  page: { before: number | undefined; size: number },
): Promise<{ rows: SuppressionRow[]; older: number | undefined }> {
  const rows = await db<(SuppressionRow & { id: number })[]>`
    select id, ${COLUMNS(db)} from suppressions
    where account_id = ${accountId}
      ${filter.reason === undefined ? db`` : db`and reason = ${filter.reason}`}
      ${filter.prefix === undefined ? db`` : db`and starts_with(lower(email), lower(${filter.prefix}))`}
      ${page.before === undefined ? db`` : db`and id < ${page.before}`}
    order by id desc
    limit ${page.size + 1}`
  const shown = rows.slice(0, page.size)
  return {
    rows: shown.map(({ id: _id, ...row }) => row),
    older: rows.length > page.size ? shown.at(-1)?.id : undefined,
  }
}

export async function suppressionOf(
  db: Db,
  accountId: number,
  email: string,
): Promise<SuppressionRow | undefined> {
  const [row] = await db<SuppressionRow[]>`
    select ${COLUMNS(db)} from suppressions
    where account_id = ${accountId} and lower(email) = lower(${email})`
  return row
}

/** Removes the account's entry for the address; whether there was one. */
export async function deleteSuppression(db: Db, accountId: number, email: string): Promise<boolean> {
  const rows = await db`
    delete from suppressions where account_id = ${accountId} and lower(email) = lower(${email})
    returning id`
  return rows.length > 0
}

/**
 * Adds the entries in one statement: a new address gets its entry, one suppressed already is
 * replaced only by a stronger entry. Returns how many were written (new or replacing).
 */
export async function addSuppressions(db: Db, accountId: number, entries: NewSuppression[]): Promise<number> {
  if (entries.length === 0) return 0
  const rows = await db`
    insert into suppressions (account_id, email, reason, scope, strength, detail, source_type, source_id)
    select distinct on (lower(e.email))
      ${accountId}::int, e.email, e.reason, e.scope, e.strength, e.detail, e.source_type, e.source_id
    from jsonb_to_recordset(${db.json(entries.map(asRecord))}::jsonb) as e(
      email text, reason text, scope text, strength smallint, detail text, source_type text, source_id integer)
    -- One row per address (the conflict clause takes each once): the strongest, else the first.
    order by lower(e.email), e.strength desc
    ${upsert(db)}
    returning id`
  return rows.length
}

/**
 * The hard bounces of settled attempts, as a statement's CTE: `settlements` names the rows with
 * `settle_id` and `settle_bounces` (HardBounce[]), `records` the outbox records they settled
 * (`id`, `account_id`). The source is the email; an address bounced by two emails at once takes
 * the first.
 */
export function bouncesSuppressed(db: Db, settlements: Fragment, records: Fragment): Fragment {
  return db`
    insert into suppressions (account_id, email, reason, scope, strength, detail, source_type, source_id)
    select distinct on (r.account_id, lower(b.email))
      r.account_id, b.email, 'hard_bounce', 'all', b.strength, b.detail, 'email', r.id
    from ${settlements} s
    join ${records} r on r.id = s.settle_id
    cross join lateral jsonb_to_recordset(s.settle_bounces) as b(email text, detail text, strength smallint)
    order by r.account_id, lower(b.email), r.id
    ${upsert(db)}`
}

/**
 * Entries of scope `all` taken from the email they name, as a statement's CTE: `entries` is a
 * query of `account_id`, `email`, `reason`, `strength`, `detail` and `outbox_id`. An address
 * named twice takes its strongest entry.
 */
export function emailEntriesSuppressed(db: Db, entries: Fragment): Fragment {
  return db`
    insert into suppressions (account_id, email, reason, scope, strength, detail, source_type, source_id)
    select distinct on (e.account_id, lower(e.email))
      e.account_id, e.email, e.reason, 'all', e.strength, e.detail, 'email', e.outbox_id
    from (${entries}) e
    order by e.account_id, lower(e.email), e.strength desc
    ${upsert(db)}`
}

/**
 * Removes an audience's member and suppresses its address for marketing in one statement, so
 * that an unsubscribe is never half done. `strength` is `suppressionStrength`'s for
 * `unsubscribe`; the source is the audience whose link was followed. Harmless when repeated.
 */
export async function unsubscribeMemberRow(
  db: Db,
  ref: { audienceId: number; memberId: number },
  strength: number,
): Promise<void> {
  await db`
    with member as (
      delete from audience_members m using audiences a
      where m.id = ${ref.memberId} and m.audience_id = ${ref.audienceId} and a.id = m.audience_id
      returning a.account_id, m.email
    )
    insert into suppressions (account_id, email, reason, scope, strength, detail, source_type, source_id)
    select account_id, email, 'unsubscribe', 'marketing', ${strength}, null, 'page', ${ref.audienceId}::int
    from member
    ${upsert(db)}`
}

/** Which of `addresses` the account suppressed for all mail, each as given, with its reason. */
export function suppressedForAll(
  db: Db,
  accountId: number,
  addresses: string[],
): Promise<{ email: string; reason: SuppressionRow['reason'] }[]> {
  return db<{ email: string; reason: SuppressionRow['reason'] }[]>`
    select email, reason from (${suppressedAmong(db, accountId, db`${addresses}::text[]`)}) found order by n`
}

/**
 * The account's entries of scope `all` among `addresses` (an SQL text[]), as rows (email, reason,
 * n: the address's place from 1), each address looked up by the unique index. A statement that
 * writes for a request puts this in it, so that looking costs no statement of its own.
 */
export function suppressedAmong(db: Db, accountId: number | Fragment, addresses: Fragment): Fragment {
  return db`
    select a.address as email, s.reason, a.n
    from unnest(${addresses}) with ordinality as a(address, n)
    join suppressions s on s.account_id = ${accountId} and lower(s.email) = lower(a.address)
    where s.scope = 'all'`
}

/**
 * The recipients of an outbox record (alias `o`) that the account's suppressions keep from it,
 * `[{email, reason}]` or null, read in the statement that claims it. Scope `all` applies to
 * every record, `marketing` to a batch's; mail to the sending address itself (a form's
 * notification to its owner) is never suppressed. Each address is looked up by the unique index.
 */
export function suppressedRecipients(db: Db): Fragment {
  return db`(
    select jsonb_agg(jsonb_build_object('email', a.address, 'reason', s.reason))
    from unnest(o.to_addresses || o.cc_addresses || o.bcc_addresses) as a(address)
    join suppressions s on s.account_id = o.account_id and lower(s.email) = lower(a.address)
    where (s.scope = 'all' or o.batch_id is not null) and lower(a.address) <> lower(o.from_address))`
}

/**
 * What an entry for an address already suppressed does: a stronger one replaces the entry
 * (keeping the address's first spelling), anything else leaves it.
 */
function upsert(db: Db) {
  return db`
    on conflict (account_id, lower(email)) do update set
      reason = excluded.reason, scope = excluded.scope, strength = excluded.strength,
      detail = excluded.detail, source_type = excluded.source_type, source_id = excluded.source_id,
      created_at = mailroom_now()
    where suppressions.strength < excluded.strength`
}

function asRecord(entry: NewSuppression) {
  return {
    email: entry.email,
    reason: entry.reason,
    scope: entry.scope,
    strength: entry.strength,
    detail: entry.detail,
    source_type: entry.sourceType,
    source_id: entry.sourceId,
  }
}
