import { memberLinkSigning, type UnsubscribeLinks } from '../audiences/unsubscribe.ts'
import { lockExpandingBatch, moveBatchRecipients, recordBatchEnds } from '../db/batches.ts'
import { BULK_PRIORITY, type ExpansionPayload, scheduleExpansion } from '../db/jobs.ts'
import type { Sql } from '../db/sql.ts'

/** How the expansion is paced: records moved per transaction, and how far ahead of delivery. */
export interface ExpansionPolicy {
  /** Recipients moved into the outbox in one transaction. */
  chunk: number
  /** The batch's queued records the expansion tops up to (the outbox never holds many more). */
  ahead: number
  /** The wait before looking again while the queue is full enough, and its longest (while it does not drain). */
  recheckMs: number
  maxRecheckMs: number
}

export const DEFAULT_EXPANSION: ExpansionPolicy = {
  chunk: 1_000,
  ahead: 5_000,
  recheckMs: 250,
  maxRecheckMs: 30_000,
}

/**
 * One run of a batch's expansion (a graphile-worker job, one per batch at a time): moves its
 * recipients from their store into the outbox, a chunk per transaction, until the batch's queue
 * holds `ahead` records; then asks for another run for when a chunk's room will have drained, at
 * the pace the queue drained since the last run (later and later while it does not drain: a
 * paused connection). Each record carries its member's unsubscribe link, signed as it is moved
 * (`links`: the service's secret and public URL). Once the connection is deleted, every
 * recipient left goes in as failed, chunk after chunk, and the batch's end is recorded after the
 * last. A crash between chunks loses nothing: the job runs again and carries on from the store.
 * A scheduled batch moves nothing before its time. The queue's runs are asked for at
 * `runPriority`: a batch is bulk mail from its first recipient, and its runs wait behind every
 * run asked for by transactional mail.
 */
export async function expandBatch(
  { sql, links }: { sql: Sql; links: UnsubscribeLinks },
  run: ExpansionPayload,
  policy: ExpansionPolicy = DEFAULT_EXPANSION,
  runPriority = BULK_PRIORITY,
): Promise<void> {
  let queuedAtStart: number | undefined
  for (;;) {
    const step = await sql.begin(
      async (tx): Promise<'moved' | 'done' | { full: number } | { dueInMs: number }> => {
        const batch = await lockExpandingBatch(tx, run.batchId)
        if (!batch) return 'done'
        // A scheduled batch's run is asked for at its time; one that runs early (the sweep's) waits,
        // unless its connection was deleted: its recipients then fail at once, as queued mail does.
        if (batch.dueInMs > 0 && batch.connectionId !== null) return { dueInMs: batch.dueInMs }
        queuedAtStart ??= batch.queued
        // A whole chunk at a time (or `ahead`, if smaller): topping up whatever drained while the
        // last step ran moved a few recipients a step, at two statements each (5200 steps for a
        // 100,000-member batch, half of PostgreSQL's time in the benchmark's row).
        if (batch.connectionId !== null && batch.queued > wholeStepBelow(policy))
          return { full: batch.queued }
        const room =
          batch.connectionId === null ? policy.chunk : Math.min(policy.chunk, policy.ahead - batch.queued)
        const signing =
          batch.unsubscribeAudienceId === null ? null : memberLinkSigning(links, batch.unsubscribeAudienceId)
        const left = await moveBatchRecipients(tx, batch, signing, room, runPriority)
        if (!left && batch.connectionId === null) await recordBatchEnds(tx, [batch.id])
        return left ? 'moved' : 'done'
      },
    )
    if (step === 'done') return
    if (step !== 'moved' && 'dueInMs' in step) {
      await scheduleExpansion(sql, run.batchId, step.dueInMs)
      return
    }
    if (step !== 'moved') {
      const waitedMs = nextLookMs(policy, run, queuedAtStart ?? step.full, step.full)
      await scheduleExpansion(sql, run.batchId, waitedMs, { seen: step.full, waitedMs })
      return
    }
  }
}

/** The most records a batch may have queued for a step to move a whole chunk (or `ahead`, if smaller). */
function wholeStepBelow(policy: ExpansionPolicy): number {
  return policy.ahead - Math.min(policy.chunk, policy.ahead)
}

/**
 * When to look again at a queue holding `queued` records: when it will have drained to room for
 * a whole step, at the pace it drained since the last look.
 */
export function nextLookMs(
  policy: ExpansionPolicy,
  last: ExpansionPayload,
  queuedAtStart: number,
  queued: number,
): number {
  if (last.seen === undefined || last.waitedMs === undefined) return policy.recheckMs
  const drained = last.seen - queuedAtStart
  if (drained <= 0) return Math.min(policy.maxRecheckMs, 2 * last.waitedMs)
  const untilRoomMs = ((queued - wholeStepBelow(policy)) * last.waitedMs) / drained
  return Math.round(Math.min(policy.maxRecheckMs, Math.max(policy.recheckMs, untilRoomMs)))
}
