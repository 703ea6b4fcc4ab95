/**
 * The fill's tenants and what they send from: accounts, their connections, webhook endpoints,
 * batches with their contents and audiences. Each statement is set-based (generate_series,
 * INSERT ... SELECT). Working tables `fill_*` map an account's rank (1 the largest sender) to
 * its rows; the fill drops them at its end.
 */
import type { Sql } from '../../src/db/sql.ts'
import { bigBatchSize, type FillShape, PROPORTIONS } from './shape.ts'

/**
 * An account's rank from a uniform u in [0, 1): rank k has a share near ln((k+1)/k) / ln(A+1),
 * Zipf's law, so the largest tenant holds a tenth of the records at 1,000 accounts.
 */
export const rankOf = (accounts: number, u: string) =>
  `least(${accounts}, floor(exp(${u} * ln(${accounts} + 1)))::int)`

export async function fillTenants(sql: Sql, shape: FillShape): Promise<void> {
  const { accounts, connectionsPerAccount } = shape
  await sql`
    create table fill_accounts as
    with made as (
      insert into accounts (email, plan, created_at, updated_at)
      select 'fill-' || k || '@tenant' || k || '.example', 'pro', now() - interval '120 days', now() - interval '120 days'
      from generate_series(1, ${accounts}::int) k
      returning id, email)
    select split_part(split_part(email, '@', 1), '-', 2)::int as rank, id as account_id from made`
  await sql`alter table fill_accounts add primary key (rank)`
  // Connections the fill's mail went through, paused by their operator: the service never sends
  // the fill's queued records anywhere during a run.
  await sql`
    insert into connections (account_id, from_address, host, port, username, password_encrypted, rate,
                             is_default, paused_until, paused_by, created_at, updated_at)
    select a.account_id, 'sender' || j || '@tenant' || a.rank || '.example', 'smtp.tenant' || a.rank || '.example', 587,
      'sender' || j, 'sealed', 600, j = 1, 'infinity', 'operator', now() - interval '120 days', now() - interval '120 days'
    from fill_accounts a cross join generate_series(1, ${connectionsPerAccount}::int) j`
  await sql`
    alter table fill_accounts add column connection_ids int[], add column endpoint_id int`
  await sql`
    update fill_accounts a set connection_ids = c.ids
    from (select account_id, array_agg(id order by id) as ids from connections group by account_id) c
    where c.account_id = a.account_id`
  await sql`
    with made as (
      insert into webhook_endpoints (account_id, url, events, secret_sealed, created_at, updated_at)
      select account_id, 'https://hooks.tenant' || rank || '.example/mailroom', array['email.sent', 'email.failed'],
        'sealed', now() - interval '120 days', now() - interval '120 days'
      from fill_accounts where rank % ${Math.round(1 / PROPORTIONS.webhookAccounts)}::int = 0
      returning id, account_id)
    update fill_accounts a set endpoint_id = made.id from made where made.account_id = a.account_id`
  await fillBatches(sql, shape)
}

/**
 * The batches: the one of bigBatchSize recipients, sent by the largest tenant ten days ago, and
 * others of 500 to 5,000 recipients until a quarter of the records are batch recipients. Each has
 * its content, and each account with batches one audience as large as its largest batch.
 */
async function fillBatches(sql: Sql, shape: FillShape): Promise<void> {
  const big = bigBatchSize(shape)
  const others = Math.max(
    0,
    Math.round((shape.records * PROPORTIONS.batchRecords - big) / (PROPORTIONS.smallestBatch * 5.5)),
  )
  await sql`
    create table fill_batches as
    select b as n, case when b = 0 then 1 else ${sql.unsafe(rankOf(shape.accounts, 'random()'))} end as rank,
      case when b = 0 then ${big}::int else (${PROPORTIONS.smallestBatch}::int * (1 + 9 * random()))::int end as size,
      case when b = 0 then now() - interval '10 days'
           else now() - ${shape.days}::int * interval '1 day' + random() * (${shape.days}::int * interval '1 day' - interval '1 hour') end as created_at,
      case when random() < 0.5 then jsonb_build_array(jsonb_build_object('name', 'campaign', 'value', 'c' || b % 40)) else '[]' end as tags
    from generate_series(0, ${others}::int) b`
  await sql`
    alter table fill_batches add column account_id int, add column connection_id int, add column from_address text,
      add column content_id int, add column batch_id int, add column audience_id int`
  await sql`
    update fill_batches b set account_id = a.account_id, connection_id = a.connection_ids[1],
      from_address = 'sender1@tenant' || a.rank || '.example'
    from fill_accounts a where a.rank = b.rank`
  await sql`
    with made as (
      insert into batch_contents (account_id, subject, text_body, html_body, created_at)
      select account_id, 'News for {{first_name}}, issue ' || n, repeat('Hello {{first_name}}, here is what is new. ', 15),
        '<html><body>' || repeat('<p style="margin:0 0 12px">Hello {{first_name}}, here is what is new this month.</p>', 40) || '</body></html>',
        created_at
      from fill_batches order by n
      returning id)
    update fill_batches b set content_id = m.id
    from (select id, row_number() over (order by id) - 1 as n from made) m where m.n = b.n`
  await sql`
    with made as (
      insert into batches (account_id, connection_id, name, total_count, content_id, from_address, tags, created_at, updated_at)
      select account_id, connection_id, 'Newsletter ' || n, size, content_id, from_address, tags, created_at, created_at
      from fill_batches order by n
      returning id)
    update fill_batches b set batch_id = m.id
    from (select id, row_number() over (order by id) - 1 as n from made) m where m.n = b.n`
  await sql`
    create table fill_audiences as
    select rank, max(account_id) as account_id, max(size) as size from fill_batches group by rank`
  await sql`
    alter table fill_audiences add column audience_id int`
  await sql`
    with made as (
      insert into audiences (account_id, name, created_at, updated_at)
      select account_id, 'Subscribers', now() - interval '100 days', now() - interval '100 days'
      from fill_audiences order by rank returning id, account_id)
    update fill_audiences f set audience_id = made.id from made where made.account_id = f.account_id`
  await sql`
    insert into audience_members (audience_id, email, payload, created_at)
    select f.audience_id, 'm' || i || '@list' || f.rank || '.example', jsonb_build_object('first_name', 'Name' || i),
      now() - interval '100 days'
    from fill_audiences f cross join generate_series(1, f.size) i
    order by f.audience_id, i`
  await sql`
    update fill_batches b set audience_id = f.audience_id from fill_audiences f where f.rank = b.rank`
  await sql`
    update batches b set unsubscribe_audience_id = f.audience_id from fill_batches f where f.batch_id = b.id`
}
