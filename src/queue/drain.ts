import { setMaxListeners } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { queueConnection } from '../db/connections.ts'
import { requeueRunBehindOthers, scheduleQueueRun } from '../db/jobs.ts'
import { queueState } from '../db/queue.ts'
import type { SendContext } from '../sending/deliver.ts'
import { BatchContents } from './batch-contents.ts'
import type { Claimant } from './liveness.ts'
import { Parking } from './parking.ts'
import type { RetryPolicy } from './retry-policy.ts'
import { laneRounds, sendQueued } from './send-queued.ts'

export interface DrainOptions {
  /** Messages of one connection in flight at once. */
  lanes: number
  /** This worker process, named on the messages it claims (see src/queue/liveness.ts). */
  claimant: Claimant
  policy: RetryPolicy
  /** Aborted when the worker stops: lanes finish the message in hand and the queue is handed on. */
  stopping: AbortSignal
  /**
   * How long a run takes new messages before it hands its worker slot on: a connection with mail
   * due for minutes (a large batch, or one paced below the sleep-through wait) would otherwise
   * hold the slot all that time, and a few such connections every slot of the process.
   */
  sliceMs: number
  /**
   * The priority of the next run when the slice ended, or a limit held the connection back, with
   * mail still due: a connection with a backlog goes behind every run asked for by new mail
   * (graphile-worker starts lower first).
   */
  backlogPriority: number
}

/**
 * A wait this short is slept through; a longer one ends the run and schedules the next, handing
 * the worker slot on meanwhile: a connection paced at a few a second would otherwise hold a slot
 * asleep for most of its slice, and with more such connections than slots each would send at
 * the pace of its turns rather than its own. Its next run is found at the worker's next poll,
 * by when its bucket holds up to a second of sending again.
 */
const SLEEP_THROUGH_MS = 50

/**
 * One run of a connection's queue: sends its due mail, `lanes` messages at a time, until nothing
 * is due, a limit holds the connection back for longer than a moment, or its slice is over; then
 * schedules the next run for the moment the obstacle ends (quota window, pacing token, pause,
 * retry back-off). A run whose slice ended with mail still due asks for its next run behind every
 * run already waiting, so that the process's slots go round the connections with due mail. A
 * disabled connection gets no next run: enabling it schedules one.
 */
export async function drainQueue(context: SendContext, connectionId: number, options: DrainOptions) {
  // Read once a run: a change to the connection schedules a run of its own, which reads it anew.
  const connection = await queueConnection(context.sql, connectionId)
  // A deleted connection's mail was failed when it was deleted.
  if (!connection) return
  let blockedForMs = 0
  // Stops every lane: a long wait on the connection, or a lane failing (the database gone, say)
  // before the run fails and graphile-worker retries it.
  const halt = new AbortController()
  const contents = new BatchContents()
  const slice = AbortSignal.timeout(options.sliceMs)
  const stop = AbortSignal.any([options.stopping, halt.signal, slice])
  // Every lane may sleep on it at once, beside the parking's listener: not a leak.
  setMaxListeners(options.lanes + 1, stop)
  const rounds = laneRounds(context, connection, options.claimant, contents)
  const parking = new Parking(options.lanes, stop)
  // A lane takes its next message while the outcome of the one before is still being recorded
  // (with others, in a round), and waits for that record before it hands on another: each lane
  // has at most one message at SMTP and one being recorded. Waiting for the record first left
  // the sessions idle while every lane was in a round at once (about a tenth of the time).
  const lane = async () => {
    let recording: Promise<void> = Promise.resolve()
    const turnOf = async (): Promise<'more' | 'idle' | 'done'> => {
      parking.wake()
      const turn = await rounds.next()
      const outcome =
        turn.kind === 'message'
          ? await sendQueued(
              context,
              connection,
              options.claimant,
              turn.claimed,
              options.policy,
              rounds.settle,
            )
          : turn
      if (outcome.kind === 'handled') {
        await recording
        recording = outcome.recorded
        // Awaited below or at the next message; a lane that fails first must not leave it unheard.
        recording.catch(() => {})
        return 'more'
      }
      if (outcome.kind === 'idle') return 'idle'
      if (outcome.waitMs > SLEEP_THROUGH_MS) {
        blockedForMs = Math.max(blockedForMs, outcome.waitMs)
        // The obstacle is the connection's: no lane takes another message before it ends.
        halt.abort()
        return 'done'
      }
      await sleep(outcome.waitMs, undefined, { signal: stop }).catch(() => {})
      return 'more'
    }
    while (!stop.aborted) {
      const next = await turnOf()
      if (next === 'done' || (next === 'idle' && !(await parking.park()))) break
    }
    await recording
  }
  const haltOnFailure = async () => {
    try {
      await lane()
    } catch (error) {
      halt.abort()
      throw error
    }
  }
  const lanes = await Promise.allSettled(Array.from({ length: options.lanes }, haltOnFailure))
  const failed = lanes.find((l): l is PromiseRejectedResult => l.status === 'rejected')
  if (failed) throw failed.reason
  await askForNextRun(context, connectionId, options, { sliceOver: slice.aborted, blockedForMs })
}

/**
 * Asks for the connection's next run once this one ended: behind every run waiting, at the
 * backlogs' priority, when its slice ended with mail due; at that priority too when a limit held
 * it back with mail waiting (a pacing token, the quota's window), or paced connections taking
 * turns at the ordinary priority would keep the batches behind them waiting for ever; at the
 * ordinary priority when its next mail falls due later (a retry, a scheduled email).
 */
async function askForNextRun(
  context: SendContext,
  connectionId: number,
  options: DrainOptions,
  ended: { sliceOver: boolean; blockedForMs: number },
): Promise<void> {
  const stopping = options.stopping.aborted
  const delay = await nextRunDelay(context, connectionId, stopping ? 0 : ended.blockedForMs)
  if (delay === 0 && ended.sliceOver && !stopping) {
    await requeueRunBehindOthers(context.sql, connectionId, options.backlogPriority)
  } else if (delay !== undefined) {
    const priority = ended.blockedForMs > 0 ? options.backlogPriority : 0
    await scheduleQueueRun(context.sql, connectionId, delay, priority)
  }
}

/** When the queue should run next, or undefined when nothing will be due without an outside change. */
async function nextRunDelay(
  context: SendContext,
  connectionId: number,
  blockedForMs: number,
): Promise<number | undefined> {
  const state = await queueState(context.sql, connectionId)
  if (!state || state.disabled || state.nextDueInMs === null) return undefined
  // Paused until resumed by hand: resuming schedules the run.
  if (state.heldForMs === Number.POSITIVE_INFINITY) return undefined
  return Math.max(state.nextDueInMs, state.heldForMs ?? 0, blockedForMs)
}
