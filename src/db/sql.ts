import postgres from 'postgres'
import { throughConnectionFaults } from './driver-faults.ts'

export type Sql = postgres.Sql
/** A pool or an open transaction: what a function needs that only runs queries. */
export type Db = postgres.Sql | postgres.TransactionSql
/** A piece of SQL built with sql`...`, to be spliced into another query. */
export type Fragment = postgres.Fragment

/**
 * `clockOffsetMs` moves Mailroom's clock in the database (mailroom_now()); only tests set it, to
 * stand just before a quota window ends or past a session's lifetime.
 */
export function connect(url: string, max = 10, clockOffsetMs = 0): Sql {
  const clock = clockOffsetMs ? { 'mailroom.clock_offset_ms': String(clockOffsetMs) } : {}
  return postgres(url, {
    max,
    onnotice: () => {},
    connection: { application_name: 'mailroom', TimeZone: 'UTC', ...clock },
  })
}

/**
 * Answers when the database does (the health check). A pooled connection that PostgreSQL closed
 * (a restart) fails the first query it carries, while the database answers: the pool opens a new
 * connection for the next, so a connection's fault is asked once more before it counts.
 */
export async function ping(sql: Sql): Promise<void> {
  await throughConnectionFaults(() => sql`select 1`, [0])
}
