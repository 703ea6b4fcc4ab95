import { fieldsShown, replyToShown } from './message-fields.ts'
import { OUTBOX_COLUMNS, READ_STATUS, readsAs } from './outbox-records.ts'
import type {
  DayActivity,
  ListedRecord,
  OutboxDetail,
  OutboxFilter,
  StoredRecord,
  Tag,
} from './outbox-types.ts'
import type { Db, Fragment } from './sql.ts'

/**
 * The outbox as its owner browses it: a filtered page of records, one record with its history,
 * and the account's sending per day.
 */

/** The subject of a listed record's batch content, when it has one (a list leaves the bodies out). */
const CONTENT_SUBJECT = (db: Db) => db`
  (select json_build_object('subject', c.subject) from batch_contents c where c.id = outbox.content_id) as content`

/** `%` and `_` in the search are plain characters, not LIKE's wildcards. */
function containing(text: string): string {
  return `%${text.replace(/[\\%_]/g, '\\$&')}%`
}

function conditions(db: Db, filter: OutboxFilter): Fragment[] {
  const parts: Fragment[] = []
  if (filter.status) parts.push(readsAs(db, db`outbox`, filter.status))
  if (filter.connectionId !== undefined) parts.push(db`connection_id = ${filter.connectionId}`)
  if (filter.batchId !== undefined) parts.push(db`batch_id = ${filter.batchId}`)
  if (filter.from) parts.push(db`created_at >= ${filter.from}::date::timestamp at time zone 'UTC'`)
  if (filter.to) parts.push(db`created_at < (${filter.to}::date + 1)::timestamp at time zone 'UTC'`)
  if (filter.recipient) {
    // The expression of the recipient index (034_outbox_recipients.sql), so that it answers.
    parts.push(
      db`mailroom_recipient_addresses(to_addresses, cc_addresses, bcc_addresses) @> array[lower(${filter.recipient}::text)]`,
    )
  }
  if (filter.search) {
    const pattern = containing(filter.search)
    // A batch recipient's subject is searched as its batch's template says it, placeholders and all.
    parts.push(db`(coalesce(subject, (select c.subject from batch_contents c where c.id = content_id)) ilike ${pattern}
      or array_to_string(to_addresses || cc_addresses || bcc_addresses, ' ') ilike ${pattern})`)
  }
  return parts
}

/**
 * The records to list: the account's outbox, or, with tags asked for, its records carrying every
 * one, found in outbox_tags (033_outbox_tags.sql), which holds each tag's records newest first:
 * a page walks the tags' entries from the cursor (`before`, when the page is in id order),
 * matched by record through the key, a few reads however many of the account's records carry
 * them, and none of a record that lacks one of the tags.
 */
function taggedOutbox(db: Db, accountId: number, tags: Tag[], before: number | undefined): Fragment {
  const [first, ...others] = tags
  if (!first) return db`outbox`
  const older = before === undefined ? db`` : db`and t.outbox_id < ${before}`
  const carrying = others.map(
    (tag) => db`and exists (select 1 from outbox_tags o where o.account_id = t.account_id
      and o.name = ${tag.name} and o.value = ${tag.value} and o.outbox_id = t.outbox_id)`,
  )
  return db`(select t.outbox_id as tagged_id from outbox_tags t
      where t.account_id = ${accountId} and t.name = ${first.name} and t.value = ${first.value} ${older}
      ${carrying.reduce((all, part) => db`${all} ${part}`, db``)}) tagged
    join outbox on outbox.id = tagged.tagged_id`
}

/**
 * Newest first, `limit` records older than the record `before` (from the newest without it). A
 * page with a date range is in creation order, ties by id: outbox_account_created (account_id,
 * created_at) is walked from the range's end, rather than every newer record by id, and the
 * records of one instant (at most a batch's chunk) are sorted by id as they come.
 */
export function outboxPage(
  db: Db,
  accountId: number,
  filter: OutboxFilter,
  page: { before?: number | undefined; limit: number },
): Promise<StoredRecord<ListedRecord>[]> {
  const ranged = filter.from !== undefined || filter.to !== undefined
  const where = [db`account_id = ${accountId}`, ...conditions(db, filter)]
  if (page.before !== undefined) {
    where.push(ranged ? madeBefore(db, accountId, page.before) : db`id < ${page.before}`)
  }
  const all = where.reduce((sum, part) => db`${sum} and ${part}`)
  // The column, not the listing's created_at, which is its text to the second (api_timestamp).
  const order = ranged ? db`outbox.created_at desc, outbox.id desc` : db`id desc`
  const tagged = Boolean(filter.tags?.length)
  // Of the fields that may be long, a listing carries only the reply-to addresses (at most 10).
  const read = (tx: Db) => tx<StoredRecord<ListedRecord>[]>`
    select ${OUTBOX_COLUMNS(db)}, ${CONTENT_SUBJECT(db)}, payload, ${replyToShown(db, db`outbox`)}
    from ${taggedOutbox(db, accountId, filter.tags ?? [], ranged ? undefined : page.before)}
    where ${ranged || tagged ? all : pageIds(db, all, page.limit)}
    order by ${order} limit ${page.limit}`
  return filter.recipient ? plannedForItsValues(db, read) : read(db)
}

/**
 * The page's records by id, its ids found first among those matching `all`, newest first. Asked
 * for ids alone, PostgreSQL reads them from the account's index on (account_id, id) (or its
 * status, connection or batch index) without the table. Asked for whole records, it may walk the
 * whole outbox's primary key backwards instead, reckoning a big tenant's records spread evenly
 * through it: when the newest records are all other tenants', that read thousands of them (a
 * tenant of 1.1 million records among 10 million: 312 ms against 0.4 ms).
 */
function pageIds(db: Db, all: Fragment, limit: number): Fragment {
  return db`id = any(array(select id from outbox where ${all} order by id desc limit ${limit}))`
}

/**
 * `read` planned for its values at every run. A prepared statement's generic plan (from its sixth
 * run) cannot see the address searched: it takes it for a common one and walks the account's
 * records newest first, testing each (a tenth of a second for a tenant of 200,000 records, and
 * growing with it), where a plan for the address reads the recipient index.
 */
function plannedForItsValues<T>(db: Db, read: (tx: Db) => Promise<T>): Promise<T> {
  const run = async (tx: Db) => {
    await tx`set local plan_cache_mode = force_custom_plan`
    return read(tx)
  }
  return ('savepoint' in db ? db.savepoint(run) : db.begin(run)) as Promise<T>
}

/**
 * The records after the record `before` in creation order, newest first. The cursor holds the
 * record's id alone: its instant is read by it. Should the record be gone (the retention purge),
 * the account's nearest record below that id stands in for it, so that the walk goes on where it
 * was instead of ending.
 */
function madeBefore(db: Db, accountId: number, before: number): Fragment {
  return db`(created_at, id) < ((select c.created_at from outbox c
    where c.account_id = ${accountId} and c.id <= ${before} order by c.id desc limit 1), ${before})`
}

/**
 * The history of record `o`, oldest first, read from what is kept anyway: its creation (and, when
 * scheduled, the moment it fell due), its attempts, the failures retries undid with the retries,
 * its own failure or cancellation, and the bounce and complaint reports read for it. Events of
 * one instant keep that order (an attempt before the failure it caused).
 */
function history(db: Db) {
  return db`
    coalesce((
      select json_agg(e.event order by e.t, e.seq, e.n) from (
        select o.created_at as t, 0 as seq, 0::bigint as n, json_build_object(
          'type', case when o.sent_now then 'submitted' when o.scheduled_at is not null then 'scheduled' else 'queued' end,
          'at', api_timestamp(o.created_at)) as event
        union all
        -- A scheduled email joins the queue at its time, unless it was canceled before.
        select o.scheduled_at, 0, 1, json_build_object('type', 'queued', 'at', api_timestamp(o.scheduled_at))
        where o.scheduled_at <= mailroom_now() and (o.status <> 'canceled' or o.updated_at >= o.scheduled_at)
        union all
        select a.at, 1, a.id, json_build_object(
          'type', case a.outcome when 'delivered' then 'sent' when 'refused' then 'refused' else 'deferred' end,
          'at', api_timestamp(a.at), 'attempt', a.attempt, 'outcome', a.outcome, 'reply', a.reply,
          'recipients', a.recipients)
        from outbox_attempts a where a.outbox_id = o.id
        union all
        select r.failed_at, 2, r.id, json_build_object('type', 'failed', 'at', api_timestamp(r.failed_at), 'reason', r.error)
        from outbox_retries r where r.outbox_id = o.id
        union all
        select r.at, 3, r.id, json_build_object('type', 'retried', 'at', api_timestamp(r.at), 'by', r.retried_by)
        from outbox_retries r where r.outbox_id = o.id
        union all
        select o.updated_at, 2, 0, json_build_object('type', 'failed', 'at', api_timestamp(o.updated_at), 'reason', o.error)
        where o.status = 'failed'
        union all
        select o.updated_at, 2, 0, json_build_object('type', 'canceled', 'at', api_timestamp(o.updated_at))
        where o.status = 'canceled'
        union all
        select r.at, 4, r.id, json_build_object('type', r.kind, 'at', api_timestamp(r.at), 'recipient', r.recipient,
          'status', r.status, 'diagnostic', r.diagnostic, 'suppressed', r.hard)
        from outbox_reports r where r.outbox_id = o.id
      ) e), '[]')`
}

/** One record of the account, with its content when kept (a batch recipient's: its batch's, whole). */
export async function outboxRecordDetail(
  db: Db,
  accountId: number,
  id: number,
): Promise<StoredRecord<OutboxDetail> | undefined> {
  const [row] = await db<StoredRecord<OutboxDetail>[]>`
    select o.id, o.account_id, ${READ_STATUS(db, db`o`)} as status, o.from_address as "from", o.to_addresses as "to", o.cc_addresses as cc,
      o.bcc_addresses as bcc, o.subject, o.error, o.attempts, o.message_id, o.connection_id,
      c.from_address as connection_from, o.batch_id, o.source, b.name as batch_name,
      case when o.status = 'queued' then api_timestamp(o.next_attempt_at) end as next_attempt_at,
      api_timestamp(o.created_at) as created_at, api_timestamp(o.updated_at) as updated_at,
      api_timestamp(o.sent_at) as sent_at, api_timestamp(o.scheduled_at) as scheduled_at, o.text_body, o.html_body, o.recipients, o.payload, o.tags,
      (select json_build_object('subject', bc.subject, 'text_body', bc.text_body, 'html_body', bc.html_body)
       from batch_contents bc where bc.id = o.content_id) as content,
      ${fieldsShown(db, db`o`)},
      ${history(db)} as history
    from outbox o
    left join connections c on c.id = o.connection_id
    left join batches b on b.id = o.batch_id
    where o.id = ${id} and o.account_id = ${accountId}`
  return row
}

// ---------------------------------------------------------------- The account's sending per day

/** Messages sent today (UTC). */
export async function sentToday(db: Db, accountId: number): Promise<number> {
  const [row] = await db<{ sent: number }[]>`
    select count(*)::int as sent from outbox
    where account_id = ${accountId} and status = 'sent'
      and created_at >= (mailroom_now() at time zone 'UTC')::date::timestamp at time zone 'UTC' - interval '1 day'
      and sent_at >= (mailroom_now() at time zone 'UTC')::date::timestamp at time zone 'UTC'`
  return row?.sent ?? 0
}

/**
 * Sent and failed messages per UTC day over the last `days` days, today included, days without
 * any included: a message counts on the day it was sent, or failed for the last time.
 */
export function dailyActivity(db: Db, accountId: number, days: number): Promise<DayActivity[]> {
  const first = db`((mailroom_now() at time zone 'UTC')::date - ${days - 1}::int)`
  return db<DayActivity[]>`
    with activity as (
      select (coalesce(sent_at, updated_at) at time zone 'UTC')::date as day,
        count(*) filter (where status = 'sent') as sent, count(*) filter (where status = 'failed') as failed
      from outbox
      where account_id = ${accountId} and status in ('sent', 'failed')
        -- Records are made before they end: the index on created_at bounds the scan.
        and created_at >= ${first}::timestamp at time zone 'UTC' - interval '1 day'
      group by 1
    )
    select to_char(d, 'YYYY-MM-DD') as day, coalesce(a.sent, 0)::int as sent, coalesce(a.failed, 0)::int as failed
    from generate_series(${first}, (mailroom_now() at time zone 'UTC')::date, interval '1 day') as d
    left join activity a on a.day = d::date
    order by d`
}
