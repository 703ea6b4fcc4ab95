import { randomBytes } from 'node:crypto'
import os from 'node:os'
import { batchesWithStrandedRecipients } from '../db/batches.ts'
import { unlockJobsNotRunning } from '../db/graphile-internals.ts'
import {
  orphanedJobWorkers,
  scheduleExpansion,
  scheduleQueueRun,
  scheduleWebhookRun,
  unlockJobWorkers,
} from '../db/jobs.ts'
import { connectionsWithStrandedMail, releaseOrphanedClaims } from '../db/queue.ts'
import type { Sql } from '../db/sql.ts'
import { endpointsWithStrandedDeliveries, releaseOrphanedDeliveries } from '../db/webhooks.ts'
import { beat, liveJobWorkers, removeSilentProcesses } from '../db/worker-processes.ts'

/** How often a worker process says it is alive. */
export const HEARTBEAT_MS = 5_000
/** Silence after which a worker process is taken for dead and its work handed on. */
export const DEAD_AFTER_MS = 30_000

/** Ids of the rows of one kind a process is working on now. */
export class HeldIds {
  readonly #ids = new Set<number>()

  hold(id: number): void {
    this.#ids.add(id)
  }

  letGo(id: number): void {
    this.#ids.delete(id)
  }

  list(): number[] {
    return [...this.#ids]
  }
}

/**
 * This worker process as the holder of claims: its name (unique among all processes that ever
 * run against the database), named on each outbox message and webhook delivery it claims, and
 * the ones it holds now. One claimed in its name that it does not hold is one whose claim
 * committed while the answer was lost with the database connection, or whose outcome it could
 * not record: its own sweep puts it back, rather than leaving it to the lease meant for a process
 * taken for dead.
 */
export class Claimant {
  readonly id = `${os.hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`
  readonly messages = new HeldIds()
  readonly deliveries = new HeldIds()
  /** graphile-worker's job workers (pools) of this process, and the jobs its tasks run now. */
  readonly jobWorkers = new Set<string>()
  readonly jobs = new HeldIds()
}

/**
 * Beats for this process, then hands on the work of processes that stopped beating: the
 * messages they held go back to the queue (to be sent again, with the same Message-ID) and
 * graphile-worker's jobs they had locked are unlocked at once, rather than after its own
 * four-hour lock timeout. Messages claimed in this process's name that it lost track of go back
 * too, once older than a heartbeat (a claim that just answered is held by then). Due mail
 * that has no queue run coming gets one, and so does a batch with recipients still to move.
 * Returns how many dead processes were found and how many connections' queues were given a run.
 */
export async function beatAndSweep(
  sql: Sql,
  claimant: Claimant,
): Promise<{ dead: number; connections: number }> {
  return sql.begin(async (tx) => {
    // Re-created if a sweep by another process took this one for dead (a long stall): its
    // messages were handed on then, and it carries on with fresh ones.
    await beat(tx, claimant.id)
    const gone = await removeSilentProcesses(tx, DEAD_AFTER_MS)
    // Also any job worker no live process owns that has held a job for as long: one that died
    // before its process recorded it, or whose process is gone. Unlocking a job that is in fact
    // still running only makes it run twice, which queue runs and the purge are made to bear.
    const orphans = await orphanedJobWorkers(tx, DEAD_AFTER_MS, await liveJobWorkers(tx))
    await unlockJobWorkers(tx, [...new Set([...gone.flatMap((g) => g.jobWorkerIds), ...orphans])])
    // And jobs this process's own job workers hold though none of its tasks runs them.
    await unlockJobsNotRunning(tx, [...claimant.jobWorkers], claimant.jobs.list(), HEARTBEAT_MS)
    const released = await releaseOrphanedClaims(
      tx,
      { processId: claimant.id, held: claimant.messages.list() },
      HEARTBEAT_MS,
    )
    const stranded = await connectionsWithStrandedMail(tx, HEARTBEAT_MS)
    const connections = new Set([...released, ...stranded])
    for (const connectionId of connections) await scheduleQueueRun(tx, connectionId)
    // A batch's recipients still in its store the same way: moved on by a run of its expansion.
    for (const batchId of await batchesWithStrandedRecipients(tx, HEARTBEAT_MS)) {
      await scheduleExpansion(tx, batchId)
    }
    // Webhook deliveries the same way: sent again (same webhook-id) when their worker died.
    const endpoints = new Set([
      ...(await releaseOrphanedDeliveries(
        tx,
        { processId: claimant.id, held: claimant.deliveries.list() },
        HEARTBEAT_MS,
      )),
      ...(await endpointsWithStrandedDeliveries(tx, HEARTBEAT_MS)),
    ])
    for (const endpointId of endpoints) await scheduleWebhookRun(tx, endpointId)
    return { dead: gone.length, connections: connections.size }
  })
}
