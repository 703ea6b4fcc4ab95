import type { Sql } from '../../src/db/sql.ts'

/**
 * `count` records of a Free account, sent (or failed) eight to nine days ago: past its 7 days of
 * retention, all due to go at the next purge. Each has its attempt, as the fill's records do.
 */
export async function fillExpired(sql: Sql, accountId: number, count: number): Promise<void> {
  const step = 100_000
  for (let first = 1; first <= count; first += step) {
    const last = Math.min(count, first + step - 1)
    await sql`
      with made as (
        insert into outbox (account_id, status, from_address, to_addresses, subject, message_id, attempts, sent_now,
                            created_at, updated_at, sent_at, text_body, html_body, recipients)
        select ${accountId}, case when n % 40 = 0 then 'failed' else 'sent' end, 'free@expiring.example',
          array['c' || n || '@expiring.example'], 'Your receipt #' || n, '<' || md5(n::text) || '@expiring.example>', 1, true,
          t, t + interval '1 second', case when n % 40 <> 0 then t + interval '1 second' end,
          'Hello,' || chr(10) || repeat('Your details are below. ', 12),
          '<html><body>' || repeat('<p style="margin:0 0 12px">Thank you for your message; the details follow.</p>', 30) || '</body></html>',
          jsonb_build_array(jsonb_build_object('address', 'c' || n || '@expiring.example', 'status', 'accepted', 'reply', '250 2.0.0 Ok'))
        from generate_series(${first}::int, ${last}::int) n
        cross join lateral (select now() - interval '9 days' + n * (interval '1 day' / ${count}::int) as t) at
        returning id, created_at, recipients)
      insert into outbox_attempts (outbox_id, attempt, at, outcome, reply, recipients)
      select id, 1, created_at + interval '1 second', 'delivered', '250 2.0.0 Ok', recipients from made`
  }
}
