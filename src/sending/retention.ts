import { setTimeout as sleep } from 'node:timers/promises'
import { deleteAudiences } from '../db/audiences.ts'
import { purgeEndedBatches, purgeUnreadContents } from '../db/batches.ts'
import { purgeOutboxChunk } from '../db/outbox-records.ts'
import type { Sql } from '../db/sql.ts'
import { purgeCounters } from '../db/usage.ts'
import { purgeWebhookEvents } from '../db/webhooks.ts'
import { PLAN_LIMITS, PLANS, type Plan } from '../plans.ts'

/** Usage counters older than this can no longer be reached by a give-back. */
const COUNTER_KEEP_DAYS = 2
/** Webhook events and their deliveries are kept this long (the last retry ends after about a day). */
const WEBHOOK_EVENT_KEEP_DAYS = 30

/**
 * How the purge deletes expired outbox records: `chunk` to a statement, each statement a
 * transaction of its own, and after each a pause `rest` times as long as it took.
 */
export interface PurgePace {
  chunk: number
  rest: number
}

/**
 * Millions expiring at once (a plan changed, a purge that had not run for a while) are never one
 * transaction holding their locks, its WAL and autovacuum's horizon for minutes, and the purge
 * takes at most half of the database's time: mail goes on being sent beside it.
 */
export const PURGE_PACE: PurgePace = { chunk: 5000, rest: 1 }

/** Each plan's retention as the plan table says it (read per run, like every other limit). */
function retentionDays(): Record<Plan, number> {
  return Object.fromEntries(PLANS.map((plan) => [plan, PLAN_LIMITS[plan].retentionDays])) as Record<
    Plan,
    number
  >
}

/**
 * Applies the plans' email log retention: outbox records past it go, and with them the
 * idempotency keys they hold, and the batch contents no record is rendered from any more; so do
 * ended batches. Mail still queued or in flight is never
 * touched, nor the records of a batch that still exists (they are its recipients). Records go
 * at `pace` (PURGE_PACE).
 */
export async function purgeExpired(
  sql: Sql,
  pace: PurgePace = PURGE_PACE,
): Promise<{ batches: number; outbox: number; counters: number; webhookEvents: number }> {
  const retention = retentionDays()
  // An ended batch past retention goes first; its records are then plain outbox records.
  const batches = await sql.begin(async (tx) => {
    const temporaryAudiences = await purgeEndedBatches(tx, retention)
    await deleteAudiences(
      tx,
      temporaryAudiences.filter((id): id is number => id !== null),
    )
    return temporaryAudiences.length
  })
  const outbox = await purgeOutbox(sql, retention, pace)
  // A batch's content goes with the last record rendered from it.
  await purgeUnreadContents(sql)
  const counters = await purgeCounters(sql, COUNTER_KEEP_DAYS)
  const webhookEvents = await purgeWebhookEvents(sql, WEBHOOK_EVENT_KEEP_DAYS)
  return { batches, outbox, counters, webhookEvents }
}

async function purgeOutbox(sql: Sql, retention: Record<Plan, number>, pace: PurgePace): Promise<number> {
  let total = 0
  for (;;) {
    const started = performance.now()
    const gone = await purgeOutboxChunk(sql, retention, pace.chunk)
    total += gone
    if (gone < pace.chunk) return total
    if (pace.rest > 0) await sleep((performance.now() - started) * pace.rest)
  }
}
