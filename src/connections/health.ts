import { countProviderFailure } from '../db/connections.ts'
import type { Db } from '../db/sql.ts'

/** The rulings' pause: after 5 provider failures in a row, 15 minutes, doubling up to 24 hours. */
const PAUSE_RULE = { failuresBeforePause: 5, firstPauseMinutes: 15, longestPauseMinutes: 24 * 60 }

// A delivered message clears the failure count and the pause streak: see recordDelivered in
// src/db/outbox.ts, which does it in the same statement that marks the message sent.

/**
 * Counts a provider failure (push-back, refused login, unreachable server). The fifth in a row
 * pauses the connection for 15 minutes, doubling with each pause in a streak up to 24 hours;
 * the connection resumes by itself when the pause runs out.
 */
export function recordProviderFailure(db: Db, connectionId: number): Promise<{ paused: boolean }> {
  return countProviderFailure(db, connectionId, PAUSE_RULE)
}
