import type { Config } from '../config.ts'
import {
  countProviderFailure,
  endUnreachablePause,
  type PauseRule,
  type ProviderFailure,
  unreachablePause,
} from '../db/connections.ts'
import { scheduleProbe, scheduleQueueRun } from '../db/jobs.ts'
import type { Db, Sql } from '../db/sql.ts'
import { openPassword } from '../smtp/secret-box.ts'
import { verifySmtpLogin } from '../smtp/transport.ts'

/**
 * The rulings' pause: after 5 provider failures in a row, 15 minutes, doubling up to 24 hours.
 * Failures within the back-off a counted one caused count once: messages failing side by side
 * in one outage are one failure, not five.
 */
const PAUSE_RULE: PauseRule = { failuresBeforePause: 5, firstPauseMinutes: 15, longestPauseMinutes: 24 * 60 }

/** How often a connection paused as out of reach is asked whether its server answers again. */
export const PROBE_INTERVAL_MS = 60_000

// A delivered message clears the failure count and the pause streak: see settleAttempt in
// src/db/outbox.ts, which does it in the same statement that records the delivery.

/**
 * Counts a failure that speaks for the whole connection: push-back (421, a 4xx to MAIL FROM or
 * to the message, a quota reply) or a server out of reach (refused logins included). A pause
 * for a server out of reach is probed, so that it lasts about as long as the outage.
 */
export async function recordProviderFailure(
  db: Db,
  connectionId: number,
  failure: ProviderFailure,
): Promise<{ pausedNow: boolean }> {
  const result = await countProviderFailure(db, connectionId, PAUSE_RULE, failure)
  if (result.pausedNow && failure.kind === 'unreachable')
    await scheduleProbe(db, connectionId, PROBE_INTERVAL_MS)
  return result
}

export interface ProbeDeps {
  sql: Sql
  secret: string
  config: Pick<Config, 'allowPrivateSmtpHosts' | 'ehloName'>
}

/**
 * Asks the server of a connection paused as out of reach whether it answers (TLS and login):
 * when it does, the pause ends and the waiting mail goes. Returns whether the connection is
 * still waiting for its server (the caller probes again later).
 */
export async function probeConnection(
  deps: ProbeDeps,
  connectionId: number,
): Promise<'resumed' | 'down' | 'not-paused'> {
  const connection = await unreachablePause(deps.sql, connectionId)
  if (!connection) return 'not-paused'
  try {
    await verifySmtpLogin(
      { ...connection, password: openPassword(deps.secret, connection.password_encrypted) },
      deps.config.allowPrivateSmtpHosts,
      deps.config.ehloName,
    )
  } catch {
    return 'down'
  }
  await deps.sql.begin(async (tx) => {
    if (await endUnreachablePause(tx, connectionId)) await scheduleQueueRun(tx, connectionId)
  })
  return 'resumed'
}
