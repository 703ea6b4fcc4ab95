import { runMigrations, Logger as WorkerLogger } from 'graphile-worker'
import type { Logger } from '../log.ts'
import type { Db, Fragment } from './sql.ts'

/**
 * graphile-worker's public SQL interface (`add_job`, `force_unlock_workers`, the `jobs` view):
 * the only module that uses it; its private tables are reached in src/db/graphile-internals.ts
 * alone. Jobs are added in the same statements as the mail they send, so this is storage, not
 * the worker: the worker (src/worker/) only runs what is added here. Its times (run_at,
 * locked_at) are on the database's clock, now(), not on mailroom_now(): graphile-worker compares
 * them with now() in its own statements. A delay computed on mailroom_now() is a duration, the
 * same on both.
 */

/** graphile-worker's task that sends a connection's queued mail. */
export const QUEUE_TASK = 'deliver_queue'
/** graphile-worker's task that applies the plans' retention. */
export const PURGE_TASK = 'purge_expired'
/** graphile-worker's task that asks a server out of reach whether it answers again. */
export const PROBE_TASK = 'probe_connection'
/** graphile-worker's task that sends a webhook endpoint's due deliveries. */
export const WEBHOOK_TASK = 'deliver_webhooks'
/** graphile-worker's task that moves a batch's recipients from their store into the outbox. */
export const EXPAND_TASK = 'expand_batch'
/** graphile-worker's task that reads a connection's mailbox for bounce and complaint reports. */
export const MAILBOX_TASK = 'read_mailbox'
/** graphile-worker's task, run every minute, that asks for a reading of every connection's mailbox. */
export const MAILBOXES_TASK = 'read_mailboxes'

export interface QueueRunPayload {
  connectionId: number
}

export type ProbePayload = QueueRunPayload

export type MailboxReadPayload = QueueRunPayload

export interface WebhookRunPayload {
  endpointId: number
}

export interface ExpansionPayload {
  batchId: number
  /** The batch's queued records when the run before this one found the queue full enough. */
  seen?: number
  /** How long that run waited before this one. */
  waitedMs?: number
}

function queueKey(connectionId: number): string {
  return `queue:${connectionId}`
}

/** How long the sweep lets a failed run wait for its next try before it asks for one now. */
const FAILED_RUN_PATIENCE_MS = 60_000

/**
 * A job that will run soon enough: under way, or waiting with attempts left, unless it failed
 * and waits out graphile-worker's back-off for longer than a minute. graphile-worker keeps a job
 * it gave up on (attempts used up) under its key; such a job promises nothing. A run that failed
 * (the database went away, say) may wait minutes for its next try: liveness rests on neither, so
 * the sweep asks for a run now, which replaces it.
 */
function willRun(db: Db): Fragment {
  return db`(j.locked_at is not null or (j.attempts < j.max_attempts
    and (j.last_error is null or j.run_at <= now() + ${FAILED_RUN_PATIENCE_MS} * interval '1 millisecond')))`
}

/**
 * A query that asks for a run of the connection's queue after `delayMs`. One job per connection,
 * keyed, so that many messages make one run and a later request moves the run rather than adding
 * one; and in a named queue of its own, so that a request made while a run is under way makes one
 * more run after it rather than a second one beside it. When a run that starts no later is
 * already waiting to start, nothing is added: it will see this mail (the liveness sweep covers
 * the rare run that started just before the mail was committed). A job given up on is replaced
 * (graphile-worker resets its attempts). A fragment, so that it can ride in the statement that
 * queues the mail: both are committed together, in one round trip.
 */
export function queueRunRequest(db: Db, connectionId: number, delayMs = 0, priority = 0): Fragment {
  const payload: QueueRunPayload = { connectionId }
  return keyedRunRequest(
    db,
    QUEUE_TASK,
    db`select ${queueKey(connectionId)}::text as key, ${db.json({ ...payload })}::json as payload`,
    delayMs,
    priority,
  )
}

/**
 * graphile-worker's priority (lower first) of a queue run asked for by bulk mail: a connection
 * whose run ended with mail still due (its slice over, or a limit holding it back), or a batch's
 * recipients moved into the queue.
 * Such a run waits behind every run asked for by new transactional mail (priority 0), which so
 * takes the next slot that frees, however many backlogs share the slots.
 */
export const BULK_PRIORITY = 1

/**
 * Asks for runs of `task` after `delayMs`, one per row of `runs` (a query yielding `key` and
 * `payload`), each keyed and in a named queue of its own (see queueRunRequest).
 */
function keyedRunRequest(db: Db, task: string, runs: Fragment, delayMs: number, priority = 0): Fragment {
  const delay = Math.max(0, Math.ceil(delayMs))
  const waiting = db`select 1 from graphile_worker.jobs j
    where j.key = r.key and j.locked_at is null and j.attempts < j.max_attempts`
  // A later request never puts off a run asked for sooner. The check below reads the statement's
  // snapshot, but add_job's upsert meets any request committed since (while a run is under way,
  // a request for now, to resume the connection, say). A delayed request seeing no run waiting is
  // a run's own next one: should the upsert meet a run asked for meanwhile, that one keeps its time.
  // Written out for each kind rather than left to a parameter: statements that ask for a run now
  // (most of them) then plan once, generically, instead of at every execution.
  const [runAt, mode] =
    delay > 0
      ? [
          db`now() + ${delay}::int * interval '1 millisecond'`,
          db`case when not exists (${waiting}) then 'preserve_run_at' else 'replace' end`,
        ]
      : [db`now()`, db`'replace'`]
  return db`
    select graphile_worker.add_job(${task}::text, r.payload, run_at => ${runAt}, queue_name => r.key,
      job_key => r.key, job_key_mode => ${mode}, priority => ${priority}::int)
    from (${runs}) r
    where not exists (${waiting} and j.run_at <= ${runAt})`
}

/**
 * A query that asks for a run of the deliveries of each webhook endpoint `endpoints` yields (a
 * query of `endpoint_id`), after `delayMs`: keyed per endpoint, like a connection's queue.
 */
export function webhookRunRequest(db: Db, endpoints: Fragment, delayMs = 0): Fragment {
  return keyedRunRequest(
    db,
    WEBHOOK_TASK,
    db`select 'webhook:' || e.endpoint_id as key, json_build_object('endpointId', e.endpoint_id) as payload
       from (${endpoints}) e`,
    delayMs,
  )
}

/**
 * A query that asks for an expansion run of each batch `batches` yields (a query of `batch_id`),
 * after `delayMs`: keyed per batch and in a named queue of its own, so that one batch is expanded
 * by one job at a time, whatever the number of worker processes.
 */
export function expansionRunRequest(
  db: Db,
  batches: Fragment,
  delayMs = 0,
  progress: Omit<ExpansionPayload, 'batchId'> = {},
): Fragment {
  return keyedRunRequest(
    db,
    EXPAND_TASK,
    db`select 'batch:' || x.batch_id as key,
         (jsonb_build_object('batchId', x.batch_id) || ${db.json({ ...progress })}::jsonb)::json as payload
       from (${batches}) x`,
    delayMs,
  )
}

/** Asks for an expansion run of the batch after `delayMs` (see expansionRunRequest). */
export async function scheduleExpansion(
  db: Db,
  batchId: number,
  delayMs = 0,
  progress: Omit<ExpansionPayload, 'batchId'> = {},
): Promise<void> {
  await db`${expansionRunRequest(db, db`select ${batchId}::int as batch_id`, delayMs, progress)}`
}

/** Asks for a run of the endpoint's deliveries after `delayMs` (see webhookRunRequest). */
export async function scheduleWebhookRun(db: Db, endpointId: number, delayMs = 0): Promise<void> {
  await db`${webhookRunRequest(db, db`select ${endpointId}::int as endpoint_id`, delayMs)}`
}

/**
 * Asks for a reading of every connection's mailbox now: keyed per connection and in a named queue
 * of its own, so that a mailbox is read by one job at a time and a slow server gathers at most
 * one reading waiting behind the one under way. Answers how many readings were asked for (a
 * mailbox whose reading already waits gets none).
 */
export async function scheduleMailboxReads(db: Db): Promise<number> {
  const rows = await db`${keyedRunRequest(
    db,
    MAILBOX_TASK,
    db`select 'mailbox:' || m.connection_id as key, json_build_object('connectionId', m.connection_id) as payload
       from connection_mailboxes m`,
    0,
  )}`
  return rows.length
}

/**
 * The milliseconds until the earliest of what a run would handle is due, as a statement measured
 * them (negative: overdue), as a run's delay: 0 when due, null when nothing waits. Measured
 * without GREATEST, which skips a NULL and would make "nothing waits" read as "due now": each
 * run would then ask for the next, for ever.
 */
export function dueInMs(measured: number | null): number | null {
  return measured === null ? null : Math.max(0, measured)
}

/** Asks for a run of the connection's queue after `delayMs`, at `priority` (see queueRunRequest). */
export async function scheduleQueueRun(
  db: Db,
  connectionId: number,
  delayMs = 0,
  priority = 0,
): Promise<void> {
  await db`${queueRunRequest(db, connectionId, delayMs, priority)}`
}

/**
 * Asks for the connection's next run now, at `priority`, behind every run already waiting:
 * graphile-worker starts jobs by priority (lower first; a run asked for by new mail, a retry or a
 * scheduled email has 0), then in the order of their `run_at`, and a run waiting since earlier
 * (asked for while this one was under way) is moved to now rather than kept ahead of the others.
 */
export async function requeueRunBehindOthers(db: Db, connectionId: number, priority: number): Promise<void> {
  const key = queueKey(connectionId)
  const payload: QueueRunPayload = { connectionId }
  await db`select graphile_worker.add_job(${QUEUE_TASK}::text, ${db.json({ ...payload })}::json,
    run_at => now(), queue_name => ${key}::text, job_key => ${key}::text, job_key_mode => 'replace',
    priority => ${priority}::int)`
}

/**
 * Asks for a probe of the connection after `delayMs`; one at a time per connection (keyed), and
 * never later than one already asked for.
 */
export async function scheduleProbe(db: Db, connectionId: number, delayMs: number): Promise<void> {
  const payload: ProbePayload = { connectionId }
  const key = `probe:${connectionId}`
  const runAt = db`now() + ${Math.max(0, Math.ceil(delayMs))}::int * interval '1 millisecond'`
  await db`
    select graphile_worker.add_job(${PROBE_TASK}::text, ${db.json({ ...payload })}::json,
      run_at => ${runAt}, job_key => ${key}::text)
    where not exists (select 1 from graphile_worker.jobs j
      where j.key = ${key} and j.locked_at is null and j.attempts < j.max_attempts and j.run_at <= ${runAt})`
}

/** A condition: the keyed run `prefix` + `id` (an SQL expression) will run. */
function runComing(db: Db, prefix: 'queue:' | 'webhook:' | 'batch:', id: Fragment): Fragment {
  return db`exists (select 1 from graphile_worker.jobs j where j.key = ${prefix} || ${id} and ${willRun(db)})`
}

/** A condition on `connectionId` (an SQL expression): a run of that connection's queue will run. */
export function queueRunComing(db: Db, connectionId: Fragment): Fragment {
  return runComing(db, 'queue:', connectionId)
}

/** A condition on `endpointId` (an SQL expression): a run of that endpoint's deliveries will run. */
export function webhookRunComing(db: Db, endpointId: Fragment): Fragment {
  return runComing(db, 'webhook:', endpointId)
}

/** A condition on `batchId` (an SQL expression): an expansion run of that batch will run. */
export function expansionRunComing(db: Db, batchId: Fragment): Fragment {
  return runComing(db, 'batch:', batchId)
}

/**
 * Job workers that have held a job for `heldMs` though no live process owns them (`owned`: the
 * job worker ids live processes recorded): ones that died before their process recorded them,
 * or whose process is gone.
 */
export async function orphanedJobWorkers(db: Db, heldMs: number, owned: string[]): Promise<string[]> {
  const [row] = await db<{ orphans: string[] }[]>`
    select coalesce(array_agg(distinct j.locked_by), '{}') as orphans from graphile_worker.jobs j
    where j.locked_by is not null and j.locked_at < now() - ${heldMs} * interval '1 millisecond'
      and not (j.locked_by = any(${owned}::text[]))`
  return row?.orphans ?? []
}

/** Unlocks the jobs of job workers that are gone, at once rather than after graphile-worker's 4-hour timeout. */
export async function unlockJobWorkers(db: Db, jobWorkers: string[]): Promise<void> {
  if (jobWorkers.length) await db`select graphile_worker.force_unlock_workers(${jobWorkers}::text[])`
}

/** graphile-worker's logs, as Mailroom's structured logs. */
export function workerLogger(log: Logger): WorkerLogger {
  return new WorkerLogger((scope) => (level, message, meta) => {
    const method = level === 'error' ? 'error' : level === 'warning' ? 'warn' : 'debug'
    log[method]({ component: 'worker', ...scope, ...meta }, message)
  })
}

/** Installs or upgrades graphile-worker's own schema (jobs are added by the API too). */
export async function migrateJobSchema(databaseUrl: string, log: Logger): Promise<void> {
  await runMigrations({ connectionString: databaseUrl, logger: workerLogger(log) })
}
