import type { Db } from '../db/sql.ts'

/** Consecutive provider failures that pause a connection. */
export const FAILURES_BEFORE_PAUSE = 5
const FIRST_PAUSE_MINUTES = 15
const LONGEST_PAUSE_MINUTES = 24 * 60

// A delivered message clears the failure count and the pause streak: see recordDelivered in
// src/sending/outbox.ts, which does it in the same statement that marks the message sent.

/**
 * Counts a provider failure (push-back, refused login, unreachable server). The fifth in a row
 * pauses the connection for 15 minutes, doubling with each pause in a streak up to 24 hours;
 * the connection resumes by itself when the pause runs out.
 */
export async function recordProviderFailure(sql: Db, connectionId: number): Promise<{ paused: boolean }> {
  const [row] = await sql<{ paused: boolean }[]>`
    update connections set
      consecutive_failures = case when consecutive_failures + 1 >= ${FAILURES_BEFORE_PAUSE} then 0
                                  else consecutive_failures + 1 end,
      paused_until = case when consecutive_failures + 1 >= ${FAILURES_BEFORE_PAUSE}
                          then mailroom_now() + make_interval(mins => least(${FIRST_PAUSE_MINUTES} * power(2, least(pause_streak, 10))::int,
                                                                   ${LONGEST_PAUSE_MINUTES}))
                          else paused_until end,
      pause_streak = case when consecutive_failures + 1 >= ${FAILURES_BEFORE_PAUSE} then pause_streak + 1
                          else pause_streak end
    where id = ${connectionId}
    returning coalesce(paused_until > mailroom_now(), false) as paused`
  return { paused: row?.paused ?? false }
}
