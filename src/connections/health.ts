import type { Config } from '../config.ts'
import {
  countProviderFailure,
  endOutage,
  outOfReach,
  type PauseRule,
  type ProviderFailure,
  waitForServer,
} from '../db/connections.ts'
import { scheduleProbe, scheduleQueueRun } from '../db/jobs.ts'
import { failExpiredQueued, queuedDueNow } from '../db/queue.ts'
import type { Db, Sql } from '../db/sql.ts'
import { openPassword } from '../smtp/secret-box.ts'
import { verifySmtpLogin } from '../smtp/transport.ts'

/**
 * A connection's pause (docs/decisions.md, "Pauses"): after 5 provider failures in a row, 15
 * minutes, doubling up to 24 hours. Failures within the back-off a counted one caused count
 * once: messages failing side by side in one outage are one failure, not five.
 */
const PAUSE_RULE: PauseRule = { failuresBeforePause: 5, firstPauseMinutes: 15, longestPauseMinutes: 24 * 60 }

/** How often a connection whose server is out of reach is asked whether it answers again. */
export const PROBE_INTERVAL_MS = 60_000

// A delivered message clears the failure count and the pause streak: see settleAttempts in
// src/db/outbox-records.ts, which does it in the same statement that records the delivery.

/**
 * Counts a failure that speaks for the whole connection: push-back (421, a 4xx to MAIL FROM or
 * to the message, a quota reply) or a server out of reach (refused logins included). A pause
 * for a server out of reach is probed, so that it lasts about as long as the outage. `counted`:
 * this failure was counted, the first of its window; otherwise the connection's failure was
 * already known.
 */
export async function recordProviderFailure(
  db: Db,
  connectionId: number,
  failure: ProviderFailure,
): Promise<{ pausedNow: boolean; counted: boolean }> {
  const result = await countProviderFailure(db, connectionId, PAUSE_RULE, failure)
  if (result.pausedNow && failure.kind === 'unreachable')
    await waitForAnswer(db, connectionId, PROBE_INTERVAL_MS)
  return result
}

/**
 * The connection's server is taken for out of reach: a probe asks it in `probeInMs` whether it
 * answers (sooner if one is already due sooner), and the queue waits for that answer rather than
 * have each message behind it find out for itself. The wait lasts a probe interval past the
 * probe, so that a probe a little late still comes first; were every probe lost, the queue would
 * find out again by itself.
 */
export async function waitForAnswer(db: Db, connectionId: number, probeInMs: number): Promise<void> {
  await waitForServer(db, connectionId, probeInMs + PROBE_INTERVAL_MS)
  await scheduleProbe(db, connectionId, probeInMs)
}

export interface ProbeDeps {
  sql: Sql
  secret: string
  config: Pick<Config, 'allowPrivateSmtpHosts' | 'ehloName'>
}

/** What a probe found: the server answers; it does not (and the connection was paused now, or not); nothing to probe. */
export type ProbeResult = 'resumed' | 'down' | 'paused' | 'nothing-to-probe'

export interface ProbePolicy {
  /** How long after a probe that finds the server down the next one comes. */
  intervalMs: number
  /** The queue lifetime: mail queued this long ago ends failed rather than wait on. */
  maxAgeMs: number
}

/**
 * Asks the server of a connection taken for out of reach whether it answers (TLS and login).
 * When it does, the wait ends, a pause it caused too, and all the waiting mail is due at once.
 * When it does not, the next probe comes a probe interval later, the failure counts toward a
 * pause (a pause under way stands as it is: probes neither lengthen it nor count toward the
 * next), and mail that has waited out the queue lifetime ends failed.
 */
export async function probeConnection(
  deps: ProbeDeps,
  connectionId: number,
  { intervalMs, maxAgeMs }: ProbePolicy,
): Promise<ProbeResult> {
  const connection = await outOfReach(deps.sql, connectionId)
  if (!connection) return 'nothing-to-probe'
  try {
    await verifySmtpLogin(
      { ...connection, password: openPassword(deps.secret, connection.password_encrypted) },
      deps.config.allowPrivateSmtpHosts,
      deps.config.ehloName,
    )
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    return deps.sql.begin(async (tx) => {
      const failure = { kind: 'unreachable', reason, windowMs: intervalMs } as const
      const { pausedNow } = connection.paused
        ? { pausedNow: false }
        : await countProviderFailure(tx, connectionId, PAUSE_RULE, failure)
      await waitForAnswer(tx, connectionId, intervalMs)
      await failExpiredQueued(tx, connectionId, maxAgeMs, reason)
      return pausedNow ? 'paused' : 'down'
    })
  }
  await deps.sql.begin(async (tx) => {
    if (!(await endOutage(tx, connectionId))) return
    await queuedDueNow(tx, connectionId)
    await scheduleQueueRun(tx, connectionId)
  })
  return 'resumed'
}
