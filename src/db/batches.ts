import type { Plan } from '../plans.ts'
import { type MemberLinkSigning, memberLink } from './audiences.ts'
import { expansionRunComing, expansionRunRequest, queueRunRequest } from './jobs.ts'
import { batchEndEvent, CONNECTION_DELETED, EVENT_COLUMNS, emailEvents } from './outbox-records.ts'
import type { BatchContent, FailedRecipient, RetriedBy, Tag } from './outbox-types.ts'
import type { Db, Fragment } from './sql.ts'
import { BATCH_CONTENT_KEY, eventsRecorded, recordedEvents } from './webhooks.ts'

/**
 * The batches, batch_recipients and batch_contents tables. A batch's progress is read from its
 * recipients' outbox records (those still in batch_recipients, not yet moved there, are waiting);
 * its content (subject and bodies, placeholders unrendered) is stored once, and the batch and
 * each record point at it.
 */

export interface BatchRow {
  id: number
  account_id: number
  connection_id: number | null
  name: string
  total_count: number
  sent_count: number
  failed_count: number
  /** Its records canceled one by one, or with the batch. */
  canceled_count: number
  started: boolean
  /** When it was scheduled for (API shape); null when it was not. */
  scheduled_at: string | null
  canceled: boolean
  created_at: string
  updated_at: string
}

/** A new batch; `name` null takes the default name `Batch Send <created_at>`; its emails get its tags. */
export async function insertBatch(
  tx: Db,
  batch: { accountId: number; connectionId: number; name: string | null; totalCount: number; tags: Tag[] },
): Promise<{ id: number; name: string }> {
  const [row] = await tx<{ id: number; name: string }[]>`
    insert into batches (account_id, connection_id, name, total_count, tags)
    values (${batch.accountId}, ${batch.connectionId},
            coalesce(${batch.name}, 'Batch Send ' || api_timestamp(mailroom_now())), ${batch.totalCount},
            ${tx.json(batch.tags)})
    returning id, name`
  if (!row) throw new Error('the batch was not recorded')
  return row
}

/** Recipients per row of a batch's store. */
const RECIPIENTS_PER_BLOCK = 1000

/**
 * Writes the batch's recipients, `members` (rows of email, payload, id), to its store in member
 * `id` order, a block of them per row, in one statement whatever their number: they never come
 * into the process. Returns how many there are.
 */
export async function storeBatchRecipients(tx: Db, batchId: number, members: Fragment): Promise<number> {
  const [row] = await tx<{ stored: number }[]>`
    with stored as (
      insert into batch_recipients (batch_id, block, recipients)
      select ${batchId}::int, (n - 1) / ${RECIPIENTS_PER_BLOCK}::int,
        jsonb_agg(jsonb_build_array(email, payload, id) order by n)
      from (select m.email, m.payload, m.id, row_number() over (order by m.id) as n from (${members}) m) m
      group by 2
      returning jsonb_array_length(recipients) as n
    )
    select coalesce(sum(n), 0)::int as stored from stored`
  return row?.stored ?? 0
}

/** Notes when the batch is scheduled for (its expansion is asked for then, see setBatchRecipients). */
export async function setBatchSchedule(tx: Db, batchId: number, at: Date): Promise<void> {
  await tx`update batches set scheduled_at = ${at} where id = ${batchId}`
}

/**
 * The batch's recipients once they are stored: how many, the temporary audience behind them, and
 * what their records are made with; and the expansion that moves them into the outbox is asked
 * for, `delayMs` from now (a scheduled batch's).
 */
export async function setBatchRecipients(
  tx: Db,
  batchId: number,
  recipients: {
    totalCount: number
    temporaryAudienceId: number | null
    contentId: number
    from: string
    requestId: string | null
    /** The audience whose unsubscribe links the records carry; null for none. */
    unsubscribeAudienceId: number | null
  },
  delayMs = 0,
): Promise<void> {
  await tx`
    with batch as (
      update batches set total_count = ${recipients.totalCount},
        temporary_audience_id = ${recipients.temporaryAudienceId}, content_id = ${recipients.contentId},
        from_address = ${recipients.from}, request_id = ${recipients.requestId},
        unsubscribe_audience_id = ${recipients.unsubscribeAudienceId}
      where id = ${batchId}
    ), run as (${expansionRunRequest(tx, tx`select ${batchId}::int as batch_id`, delayMs)})
    select count(*) from run`
}

/** A batch being expanded, locked, with how many of its records are queued now. */
export interface ExpansionState extends ExpandingBatch {
  unsubscribeAudienceId: number | null
  queued: number
  /** Until it is due (a scheduled batch); 0 or less once it is. */
  dueInMs: number
}

/**
 * Locks the batch for a step of its expansion (undefined when it is gone or has nothing left to
 * move). The batch is locked before anything is queued on its connection: a deletion of the
 * connection locks its batches first (see failQueuedOfConnection).
 */
export async function lockExpandingBatch(tx: Db, batchId: number): Promise<ExpansionState | undefined> {
  const [row] = await tx<ExpansionState[]>`
    select b.id, b.account_id as "accountId", b.connection_id as "connectionId", b.from_address as "from",
      b.content_id as "contentId", b.request_id as "requestId", b.unsubscribe_audience_id as "unsubscribeAudienceId",
      (select count(*) from outbox o where o.batch_id = b.id and o.status = 'queued')::int as queued,
      coalesce(ceil(extract(epoch from b.scheduled_at - mailroom_now()) * 1000), 0)::float8 as "dueInMs"
    from batches b
    where b.id = ${batchId} and exists (select 1 from batch_recipients r where r.batch_id = b.id)
    for update of b`
  return row
}

/**
 * Batches with recipients still in their store and no expansion run coming (graphile-worker gave
 * up on it, or it was lost), created more than `graceMs` ago: the sweep asks for their runs.
 */
export async function batchesWithStrandedRecipients(db: Db, graceMs: number): Promise<number[]> {
  const rows = await db<{ id: number }[]>`
    select b.id from batches b
    where exists (select 1 from batch_recipients r where r.batch_id = b.id)
      and b.created_at <= mailroom_now() - ${graceMs} * interval '1 millisecond'
      and not ${expansionRunComing(db, db`b.id`)}`
  return rows.map((r) => r.id)
}

/** Stores a batch's content once: the template its recipients' messages are rendered from. */
export async function insertBatchContent(tx: Db, accountId: number, content: BatchContent): Promise<number> {
  const [row] = await tx<{ id: number }[]>`
    insert into batch_contents (account_id, subject, text_body, html_body)
    values (${accountId}, ${content.subject}, ${content.text_body}, ${content.html_body})
    returning id`
  if (!row) throw new Error('the batch content was not recorded')
  return row.id
}

export async function batchContent(db: Db, id: number): Promise<BatchContent | undefined> {
  const [row] = await db<
    BatchContent[]
  >`select subject, text_body, html_body from batch_contents where id = ${id}`
  return row
}

/**
 * Contents no outbox record or batch points at any more (their records and batch were purged),
 * and no webhook delivery still waiting renders its event's subject from.
 */
export async function purgeUnreadContents(db: Db): Promise<number> {
  const gone = await db`
    delete from batch_contents c
    where not exists (select 1 from outbox o where o.content_id = c.id)
      and not exists (select 1 from batches b where b.content_id = c.id)
      and c.id not in (
        select (v.data -> ${BATCH_CONTENT_KEY}::text ->> 'id')::integer
        from webhook_deliveries d join webhook_events v on v.id = d.event_id
        where d.status in ('pending', 'sending') and v.data ? ${BATCH_CONTENT_KEY}::text)`
  return gone.count
}

/** Batches (alias `b`) with their counts from their recipients' records. */
const BATCHES = (db: Db) => db`
  select b.id, b.account_id, b.connection_id, b.name, b.total_count, r.sent_count, r.failed_count,
    r.canceled_count, r.started, api_timestamp(b.scheduled_at) as scheduled_at, b.canceled_at is not null as canceled,
    api_timestamp(b.created_at) as created_at,
    api_timestamp(greatest(b.updated_at, r.last_change)) as updated_at
  from batches b cross join lateral (${batchProgress(db, db`b.id`)}) r`

/** The batch with its counts, optionally locked. */
export async function batchById(db: Db, id: number, lock = false): Promise<BatchRow | undefined> {
  const [row] = await db<BatchRow[]>`${BATCHES(db)} where b.id = ${id} ${lock ? db`for update of b` : db``}`
  return row
}

/** The account's batches, newest first, `limit` of those older than `before`. */
export function batchPage(
  db: Db,
  accountId: number,
  page: { before?: number | undefined; limit: number },
): Promise<BatchRow[]> {
  return db<BatchRow[]>`
    ${BATCHES(db)}
    where b.account_id = ${accountId} ${page.before === undefined ? db`` : db`and b.id < ${page.before}`}
    order by b.id desc
    limit ${page.limit}`
}

/** Deletes the batch; returns its temporary audience (for the caller to delete), if any. */
export async function deleteBatchRow(tx: Db, id: number): Promise<{ temporaryAudienceId: number | null }> {
  const [row] = await tx<{ temporary_audience_id: number | null }[]>`
    delete from batches where id = ${id} returning temporary_audience_id`
  return { temporaryAudienceId: row?.temporary_audience_id ?? null }
}

/**
 * Deletes the batches past their plan's retention that no longer have mail queued or in flight;
 * returns their temporary audiences (for the caller to delete).
 */
export async function purgeEndedBatches(
  db: Db,
  retentionDays: Record<Plan, number>,
): Promise<(number | null)[]> {
  const rows = await db<{ temporary_audience_id: number | null }[]>`
    delete from batches b using accounts a
    where a.id = b.account_id
      and b.created_at < mailroom_now() - make_interval(days => (${db.json(retentionDays)}::jsonb ->> a.plan)::int)
      and not exists (select 1 from outbox o where o.batch_id = b.id and o.status in ('queued', 'sending'))
      and not exists (select 1 from batch_recipients r where r.batch_id = b.id)
    returning b.temporary_audience_id`
  return rows.map((r) => r.temporary_audience_id)
}

// ---------------------------------------------------------------- Batches' outbox records

/** A batch whose recipients are moved from their store into the outbox (see moveBatchRecipients). */
export interface ExpandingBatch {
  id: number
  accountId: number
  /** Null once the connection was deleted: the recipients then go in as failed. */
  connectionId: number | null
  from: string
  contentId: number
  /** The API request that created the batch. */
  requestId: string | null
}

/**
 * Moves up to `limit` of the batch's next recipients, in their order, from their store into the
 * outbox in one statement, from the first block of the store: taken off it, inserted here, so
 * that a crash at any moment neither loses nor duplicates one. Each record holds its recipient
 * and payload (the content is the batch's, rendered when sent), with the member's unsubscribe link
 * signed with `links` (in the payload as `unsubscribe_url`, reserved: it wins over a payload's
 * own), under a new Message-ID in the sender's domain, as newMessageId makes them. Queued, with a
 * run of the connection's queue asked for; or, when the connection was deleted, failed as the
 * mail queued on it was, with their email.failed events. The queue's run is asked for at
 * `runPriority`. Returns whether any are left.
 */
export async function moveBatchRecipients(
  tx: Db,
  batch: ExpandingBatch,
  links: MemberLinkSigning | null,
  limit: number,
  runPriority: number,
): Promise<boolean> {
  const domain = batch.from.slice(batch.from.lastIndexOf('@') + 1)
  const gone = batch.connectionId === null
  // The queue's run, or the webhook deliveries' of the events; referring to it makes it happen.
  const [runs, requested] =
    batch.connectionId === null
      ? [recordedEvents(tx, emailEvents(tx, tx`record`)), eventsRecorded(tx)]
      : [
          tx`run as (${queueRunRequest(tx, batch.connectionId, 0, runPriority)})`,
          tx`(select count(*) from run)`,
        ]
  const link = links ? memberLink(tx, links, tx`taken.member_id`) : tx`null::text`
  const [row] = await tx<{ left: boolean }[]>`
    with block as (
      select block, recipients, jsonb_array_length(recipients) > ${limit} as split
      from batch_recipients where batch_id = ${batch.id} order by block limit 1
    ), taken as (
      -- A member without payload was stored with a JSON null.
      select r.value ->> 0 as email, nullif(r.value -> 1, 'null') as payload, (r.value ->> 2)::int as member_id, r.n
      from block, jsonb_array_elements(block.recipients) with ordinality as r(value, n)
      where r.n <= ${limit}
    ), rest as (
      update batch_recipients s set recipients = jsonb_path_query_array(s.recipients, ${`$[${limit} to last]`}::jsonpath)
      from block where s.batch_id = ${batch.id} and s.block = block.block and block.split
    ), emptied as (
      delete from batch_recipients s
      using block where s.batch_id = ${batch.id} and s.block = block.block and not block.split
    ), record as (
      insert into outbox (account_id, connection_id, status, error, from_address, to_addresses, content_id, payload,
                          message_id, batch_id, unsubscribe_url, next_attempt_at, request_id, tags, source)
      select ${batch.accountId}::int, ${batch.connectionId}::int, ${gone ? 'failed' : 'queued'}::text,
             ${gone ? CONNECTION_DELETED : null}::text, ${batch.from}::text, array[t.email], ${batch.contentId}::int,
             ${links ? tx`coalesce(t.payload, '{}') || jsonb_build_object('unsubscribe_url', t.url)` : tx`t.payload`},
             '<' || gen_random_uuid() || '@' || ${domain}::text || '>', ${batch.id}::int,
             t.url, ${gone ? tx`null` : tx`mailroom_now()`}, ${batch.requestId}::text,
             (select b.tags from batches b where b.id = ${batch.id}), 'batch'
      from (select taken.*, ${link} as url from taken) t
      order by t.n
      returning ${EVENT_COLUMNS(tx)}
    ), ${runs}
    select coalesce((select split from block), false)
        or exists (select 1 from batch_recipients s, block
                   where s.batch_id = ${batch.id} and s.block > block.block) as left,
      ${requested} as requested`
  return row?.left ?? false
}

/**
 * What the records of the batch `batchId` (an SQL expression) say of it, as a subquery: its sent,
 * failed and canceled counts, whether a worker has taken any of its messages, and their last change.
 * Every column it reads is in the index outbox_batch_progress, which answers it alone.
 */
function batchProgress(db: Db, batchId: Fragment): Fragment {
  return db`
    select count(*) filter (where status = 'sent')::int as sent_count,
           count(*) filter (where status = 'failed')::int as failed_count,
           count(*) filter (where status = 'canceled')::int as canceled_count,
           -- An email canceled before any attempt started nothing.
           coalesce(bool_or(status not in ('queued', 'canceled') or attempts > 0), false) as started,
           max(updated_at) as last_change
    from outbox where batch_id = ${batchId}`
}

/** A batch's failed recipients in the order they were queued; a page of them (after `after`) when asked. */
export function failedRecipients(
  db: Db,
  batchId: number,
  page: { after?: number | undefined; limit?: number } = {},
): Promise<FailedRecipient[]> {
  return db<FailedRecipient[]>`
    select id as outbox_id, to_addresses[1] as email, error, attempts, api_timestamp(updated_at) as updated_at
    from outbox
    where batch_id = ${batchId} and status = 'failed' ${page.after === undefined ? db`` : db`and id > ${page.after}`}
    order by id
    ${page.limit === undefined ? db`` : db`limit ${page.limit}`}`
}

/** Who queued failed mail again: the account's owner on the dashboard, or the operator command. */

/**
 * Queues a batch's failed recipients again (their counts and outcomes reset: each record is one
 * recipient), through their connection or, when theirs was deleted, `fallbackConnectionId`, and
 * keeps in each record's history who retried it and the failure it undid. Returns the
 * connection of each.
 */
export async function requeueFailedOfBatch(
  tx: Db,
  batchId: number,
  fallbackConnectionId: number | null,
  by: RetriedBy,
): Promise<(number | null)[]> {
  const rows = await tx<{ connection_id: number | null }[]>`
    with failed as (
      select id, error, updated_at from outbox where batch_id = ${batchId} and status = 'failed' for update
    ), requeued as (
      update outbox o set status = 'queued', error = null, failures = 0, deferrals = 0, recipients = null,
        connection_id = coalesce(o.connection_id, ${fallbackConnectionId}::int), next_attempt_at = mailroom_now(),
        updated_at = mailroom_now()
      from failed where o.id = failed.id
      returning o.id, o.connection_id
    ), noted as (
      insert into outbox_retries (outbox_id, retried_by, failed_at, error)
      select id, ${by}::text, updated_at, error from failed
    )
    select connection_id from requeued`
  return rows.map((r) => r.connection_id)
}

/** How many of the batch `batchId` (an SQL expression) yields are still in its store, not yet moved here. */
export function storedRecipients(db: Db, batchId: Fragment): Fragment {
  return db`(select coalesce(sum(jsonb_array_length(r.recipients)), 0) from batch_recipients r where r.batch_id = ${batchId})`
}

/** The end events of `batchIds` that have ended, by the caller's earlier statements (see mailroom_batch_end_event). */
export async function recordBatchEnds(tx: Db, batchIds: number[]): Promise<void> {
  if (batchIds.length === 0) return
  await tx`
    with settled_batches as (
      select unnest(${batchIds}::int[]) as batch_id, null::int[] as ids, null::text[] as statuses
    ), ${recordedEvents(tx, batchEndEvent(tx, tx`settled_batches`))}
    select ${eventsRecorded(tx)}`
}
