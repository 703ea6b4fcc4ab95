import type { Db } from './sql.ts'

/** What a connection's recipients of the last days came to: the figures of its bounce and complaint rates. */
export interface ConnectionReports {
  connection_id: number
  /** Recipients its server answered for good: accepted (later bounced or complained or not) or refused. */
  sent_to: number
  /** Of those, the ones whose mailbox does not exist: said at RCPT, or in a bounce report. */
  bounced: number
  /** Of those, the ones whose complaint report came back. */
  complained: number
}

/**
 * Each connection's recipients of the mail that ended in the last `days` days, and how many of
 * them bounced for good or complained: the same recipients above and below each rate.
 *
 * Every part is bounded by an index to the window, whatever the table holds: the records by
 * (account_id, created_at) (a record is made before it ends; a day's slack takes mail that
 * waited in the queue), each counted from its own recipients' outcomes; the bounce reports by
 * (connection_id, at) (a report comes after its email). A hard bounce at RCPT is a refusal that
 * suppressed the address from this email (the suppression's unique index); a complaint's
 * recipient reads `complained`.
 */
export function connectionReports(db: Db, accountId: number, days: number): Promise<ConnectionReports[]> {
  const start = db`mailroom_now() - make_interval(days => ${days}::int)`
  const ended = (o: string) =>
    db`${db(o)}.account_id = ${accountId} and ${db(o)}.connection_id is not null
      and ${db(o)}.status in ('sent', 'failed')
      and ${db(o)}.created_at >= mailroom_now() - make_interval(days => ${days + 1}::int)
      and coalesce(${db(o)}.sent_at, ${db(o)}.updated_at) >= ${start}`
  return db<ConnectionReports[]>`
    with sent as (
      select o.connection_id, sum(r.sent_to)::int as sent_to, sum(r.refused_gone)::int as refused_gone,
        sum(r.complained)::int as complained
      from outbox o
      cross join lateral (
        select count(*) as sent_to,
          count(*) filter (where x ->> 'status' = 'complained') as complained,
          count(*) filter (where x ->> 'status' = 'refused' and exists (
            select 1 from suppressions s
            where s.account_id = o.account_id and lower(s.email) = lower(x ->> 'address')
              and s.reason = 'hard_bounce' and s.source_type = 'email' and s.source_id = o.id)) as refused_gone
        from jsonb_array_elements(o.recipients) as x
        where x ->> 'status' in ('accepted', 'refused', 'bounced', 'complained')
      ) r
      where ${ended('o')}
      group by o.connection_id
    ), reported as (
      select o.connection_id, count(distinct (b.outbox_id, b.recipient))::int as bounced
      from outbox_reports b
      join outbox o on o.id = b.outbox_id
      where b.connection_id in (select id from connections where account_id = ${accountId})
        and b.at >= ${start} and b.kind = 'bounced' and b.hard and ${ended('o')}
      group by o.connection_id
    )
    select s.connection_id, s.sent_to, s.refused_gone + coalesce(r.bounced, 0) as bounced, s.complained
    from sent s left join reported r using (connection_id)`
}
