import type { Db } from './sql.ts'

/** Why a paused connection is paused: read for the dashboard's list of connections. */
export interface PauseReason {
  connection_id: number
  /** Paused by the service after provider failures, rather than by hand. */
  automatic: boolean
  /** The last error a message on the connection met. */
  last_error: string | null
}

export function pauseReasons(db: Db, accountId: number): Promise<PauseReason[]> {
  return db<PauseReason[]>`
    select c.id as connection_id, c.pause_streak > 0 and c.paused_until <> 'infinity' as automatic,
      (select o.error from outbox o
       where o.account_id = c.account_id and o.connection_id = c.id and o.error is not null
       order by o.id desc limit 1) as last_error
    from connections c
    where c.account_id = ${accountId} and c.paused_until > mailroom_now()`
}

/** Mail waiting on the connection: what deleting it would fail. */
export async function queuedOnConnection(db: Db, accountId: number, connectionId: number): Promise<number> {
  const [row] = await db<{ queued: number }[]>`
    select count(*)::int as queued from outbox
    where account_id = ${accountId} and connection_id = ${connectionId} and status = 'queued'`
  return row?.queued ?? 0
}
