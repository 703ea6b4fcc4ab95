/**
 * The fill's outbox records, one day at a time, oldest first, in time order (ids grow with time
 * as the service makes them): the day's transactional mail and its batches' recipients, then
 * their attempts, retries by hand, and webhook events with their deliveries.
 */
import type { Sql } from '../../src/db/sql.ts'
import { CATEGORIES, type FillShape, PROPORTIONS, SUBJECTS } from './shape.ts'
import { rankOf } from './tenants.ts'

const P = PROPORTIONS

/** A subject drawn by the weights of SUBJECTS, from a uniform u in [0, 1). */
function subjectOf(u: string): string {
  const total = SUBJECTS.reduce((sum, [, w]) => sum + w, 0)
  let below = 0
  const arms = SUBJECTS.map(([text, weight]) => {
    below += weight
    const quoted = `'${text.replace(/'/g, "''")}'`
    return `when ${u} < ${below / total} then ${quoted}${text.endsWith('#') || text.endsWith(' ') ? ' || n' : ''}`
  })
  return `case ${arms.join(' ')} end`
}

const categories = `(array[${CATEGORIES.map((c) => `'${c}'`).join(',')}])`
const HTML = `'<html><body><table width="600">' || repeat('<tr><td style="font-family:sans-serif;padding:8px">Thank you for your message; the details follow.</td></tr>', 24)`

/** The day's transactional records, as the columns of the outbox insert below. */
function transactional(shape: FillShape) {
  return `
    select t.created_at, fa.account_id, fa.connection_ids[(1 + n % ${shape.connectionsPerAccount})::int] as connection_id,
      t.status, 'sender' || (1 + n % ${shape.connectionsPerAccount}) || '@tenant' || fa.rank || '.example' as from_address,
      t.address, ${subjectOf('t.u_subject')} as subject,
      null::int as batch_id, null::int as content_id, null::jsonb as payload, null::text as unsubscribe_url,
      case when t.u_tag < ${P.tagged * P.secondTag} then jsonb_build_array(
             jsonb_build_object('name', 'category', 'value', ${categories}[(1 + n % 20)::int]),
             jsonb_build_object('name', 'plan', 'value', (array['free', 'pro', 'team'])[(1 + n % 3)::int]))
           when t.u_tag < ${P.tagged} then jsonb_build_array(jsonb_build_object('name', 'category', 'value', ${categories}[(1 + n % 20)::int]))
           else '[]' end as tags,
      t.sent_now, t.u_retry, n, fa.rank,
      'Hello,' || chr(10) || chr(10) || 'Thank you for your order ' || n || '. ' || repeat('Your details are below. ', 10) as text_body,
      ${HTML} || '<p>' || n || '</p></table></body></html>' as html_body
    from generate_series($1::bigint, $2::bigint) n
    cross join lateral (
      select $3::timestamptz + random() * ($4::timestamptz - $3::timestamptz) as created_at,
        ${rankOf(shape.accounts, 'random()')} as rank_drawn, random() as u_status, random() as u_subject,
        random() as u_tag, random() as u_retry, random() < ${P.sentNow} as sent_now_drawn,
        'c' || (random() * ${P.recipientsPerAccount})::int || '@d' || n % 97 || '.example' as address
      offset 0) d
    cross join lateral (
      select d.created_at, d.u_subject, d.u_tag, d.u_retry, d.address,
        case when d.u_status < ${P.failed} then 'failed'
             when d.u_status < ${P.failed + P.canceled} then 'canceled'
             when d.u_status < ${P.failed + P.canceled + P.queuedLastDay} and d.created_at > now() - interval '1 day' then 'queued'
             else 'sent' end as status,
        d.sent_now_drawn and d.u_status >= ${P.failed + P.canceled + P.queuedLastDay} as sent_now) t
    join fill_accounts fa on fa.rank = d.rank_drawn`
}

/** The recipients' records of the batches made that day, as the same columns. */
const BATCH_RECIPIENTS = `
    select b.created_at + i * interval '20 milliseconds', b.account_id, b.connection_id,
      case when u < ${P.failed} then 'failed' when u < ${P.failed + P.canceled} then 'canceled' else 'sent' end,
      b.from_address, 'm' || i || '@list' || b.rank || '.example', null, b.batch_id, b.content_id,
      jsonb_build_object('first_name', 'Name' || i), 'https://mail.example.com/u/' || md5(b.batch_id || '.' || i),
      b.tags, false, random(), b.batch_id::bigint * 1000000 + i, b.rank, null, null
    from fill_batches b cross join generate_series(1, b.size) i cross join lateral (select random() as u where i is not null offset 0) r
    where b.created_at >= $3::timestamptz and b.created_at < $4::timestamptz`

/** Inserts the records of [start, end), ids `first` to `last` for the transactional ones. */
async function insertDay(sql: Sql, shape: FillShape, first: number, last: number, start: Date, end: Date) {
  await sql.unsafe(
    `
    insert into outbox (created_at, account_id, connection_id, status, from_address, to_addresses, subject, batch_id,
      content_id, payload, unsubscribe_url, tags, sent_now, message_id, request_id, text_body, html_body, attempts,
      failures, updated_at, sent_at, error, recipients, idempotency_key_sha256, scheduled_at, next_attempt_at)
    select r.created_at, account_id, connection_id, status, from_address, array[address], subject, batch_id,
      content_id, payload, unsubscribe_url, tags, sent_now,
      '<' || md5(n::text) || '@tenant' || rank || '.example>', 'req_' || substr(md5(n::text), 1, 20),
      text_body, html_body, a.attempts, greatest(a.attempts - 1, 0) + (status = 'failed')::int,
      r.created_at + a.attempts * interval '2 seconds',
      case when status = 'sent' then r.created_at + a.attempts * interval '2 seconds' end,
      case when status = 'failed' then '550 5.1.1 <' || address || '>: Recipient address rejected: User unknown' end,
      case when a.attempts > 0 then jsonb_build_array(jsonb_build_object('address', address,
        'status', case when status = 'sent' then 'accepted' else 'refused' end,
        'reply', case when status = 'sent' then '250 2.0.0 Ok: queued as ' || upper(substr(md5(n::text), 1, 12))
                      else '550 5.1.1 User unknown' end)) end,
      case when sent_now and u_retry > ${1 - P.idempotent} then sha256(('fill-' || n)::bytea) end,
      case when status = 'queued' and u_retry < 0.5 then r.created_at + interval '3 days' end,
      case when status = 'queued' then r.created_at + case when u_retry < 0.5 then interval '3 days' else interval '10 minutes' end end
    from (${transactional(shape)} union all ${BATCH_RECIPIENTS}) as r(created_at, account_id, connection_id, status,
      from_address, address, subject, batch_id, content_id, payload, unsubscribe_url, tags, sent_now, u_retry, n, rank,
      text_body, html_body)
    cross join lateral (
      select case when status in ('queued', 'canceled') then 0
                  when status = 'failed' then 1 + (u_retry * 3)::int % 3
                  when u_retry < ${P.retried} then 2 else 1 end as attempts) a
    order by r.created_at`,
    [first, last, start.toISOString(), end.toISOString()],
  )
}

/** The attempts, retries by hand and webhook traffic of the records after id `after`. */
async function insertHistory(sql: Sql, after: number) {
  await sql`
    insert into outbox_attempts (outbox_id, attempt, at, outcome, reply, recipients)
    select o.id, g, o.created_at + g * interval '2 seconds',
      case when g < o.attempts then 'deferred' when o.status = 'sent' then 'delivered' else 'refused' end,
      case when g < o.attempts then '451 4.7.1 Try again later' when o.status = 'sent' then '250 2.0.0 Ok' else o.error end,
      case when g < o.attempts then jsonb_build_array(jsonb_build_object('address', o.to_addresses[1], 'status', 'deferred', 'reply', '451 4.7.1 Try again later'))
           else o.recipients end
    from outbox o cross join generate_series(1, o.attempts) g
    where o.id > ${after}`
  await sql`
    insert into outbox_retries (outbox_id, at, retried_by, failed_at, error)
    select id, updated_at - interval '1 second', 'dashboard', created_at + interval '1 second', '421 4.3.0 Try again later'
    from outbox where id > ${after} and batch_id is not null and status in ('sent', 'failed') and attempts > 1
      and random() < ${P.retriedByHand}`
  await sql`
    with events as (
      insert into webhook_events (account_id, type, data, created_at)
      select o.account_id, 'email.' || o.status,
        jsonb_build_object('email_id', o.id, 'to', o.to_addresses, 'subject', o.subject, 'status', o.status,
          'message_id', o.message_id, 'batch_id', o.batch_id, 'tags', o.tags), o.updated_at
      from outbox o join fill_accounts a on a.account_id = o.account_id
      where o.id > ${after} and a.endpoint_id is not null and o.status in ('sent', 'failed')
        and o.created_at > now() - interval '30 days'
      returning id, account_id, created_at)
    insert into webhook_deliveries (endpoint_id, event_id, status, attempts, next_attempt_at, response_status,
                                    last_attempt_at, created_at, updated_at)
    select a.endpoint_id, e.id, 'delivered', 1, null, 200, e.created_at + interval '1 second', e.created_at, e.created_at
    from events e join fill_accounts a on a.account_id = e.account_id`
}

/** Every day of the shape's records, oldest first; `progress` hears of each day done. */
export async function fillRecords(sql: Sql, shape: FillShape, progress: (day: number) => void) {
  const batchRecords =
    (await sql<{ n: number }[]>`select coalesce(sum(size), 0)::int as n from fill_batches`)[0]?.n ?? 0
  const perDay = Math.max(1, Math.round((shape.records - batchRecords) / shape.days))
  const now = Date.now()
  for (let day = 0; day < shape.days; day++) {
    const start = new Date(now - (shape.days - day) * 86_400_000)
    const end = new Date(Math.min(now - 60_000, start.getTime() + 86_400_000))
    const [{ after } = { after: 0 }] = await sql<
      { after: number }[]
    >`select coalesce(max(id), 0)::int as after from outbox`
    await insertDay(sql, shape, day * perDay + 1, (day + 1) * perDay, start, end)
    await insertHistory(sql, after)
    progress(day)
  }
}

/** Suppressed addresses: each account's share of its records' recipients, hard bounces mostly. */
export async function fillSuppressions(sql: Sql) {
  await sql`
    insert into suppressions (account_id, email, reason, scope, strength, detail, source_type, created_at)
    select a.account_id, 'c' || (random() * ${P.recipientsPerAccount})::int || '@d' || (random() * 97)::int || '.example',
      r.reason, r.scope, r.strength, '550 5.1.1 User unknown', 'email', now() - random() * interval '80 days'
    from fill_accounts a
    join (select account_id, count(*) as n from outbox group by account_id) c on c.account_id = a.account_id
    cross join lateral generate_series(1, greatest(1, (c.n * ${P.suppressions}::float8)::int)) g
    cross join lateral (select random() < 0.8 as bounced where g is not null offset 0) u
    -- Strengths as suppressionStrength gives them (src/suppressions/strength.ts).
    cross join lateral (select case when u.bounced then 'hard_bounce' else 'unsubscribe' end as reason,
      case when u.bounced then 'all' else 'marketing' end as scope, case when u.bounced then 5 else 0 end::smallint as strength) r
    on conflict do nothing`
}
