import { EventEmitter } from 'node:events'
import { type JobHelpers, run, type TaskList, type WorkerEvents } from 'graphile-worker'
import pg from 'pg'
import { DEFAULT_EXPANSION, type ExpansionPolicy, expandBatch } from '../batches/expansion.ts'
import { readMailbox } from '../bounces/mailbox-reading.ts'
import { PROBE_INTERVAL_MS, probeConnection } from '../connections/health.ts'
import {
  BULK_PRIORITY,
  EXPAND_TASK,
  type ExpansionPayload,
  MAILBOX_TASK,
  MAILBOXES_TASK,
  type MailboxReadPayload,
  PROBE_TASK,
  type ProbePayload,
  PURGE_TASK,
  QUEUE_TASK,
  type QueueRunPayload,
  scheduleMailboxReads,
  unlockJobWorkers,
  WEBHOOK_TASK,
  type WebhookRunPayload,
  workerLogger,
} from '../db/jobs.ts'
import { recordJobWorker, registerProcess, unregisterProcess } from '../db/worker-processes.ts'
import { drainQueue } from '../queue/drain.ts'
import { beatAndSweep, Claimant, HEARTBEAT_MS } from '../queue/liveness.ts'
import { defaultRetryPolicy, type RetryPolicy } from '../queue/retry-policy.ts'
import { purgeExpired } from '../sending/retention.ts'
import type { Services } from '../services.ts'
import { DEFAULT_WEBHOOK_POLICY, deliverWebhooks, type WebhookPolicy } from '../webhooks/deliver.ts'
import { lookAgainAfterHiddenJobs } from './look-again.ts'
import { endWhenQuiet } from './quiet-pool.ts'
import { keepTableStatistics } from './table-statistics.ts'

export interface RunningWorker {
  /** Finishes the messages in hand, hands the rest of the queue on, closes, then resolves. */
  stop(): Promise<void>
}

export interface WorkerOptions {
  /** Connections whose queues run at once in this process. */
  concurrency: number
  /** How long a connection's queue run takes new messages before it hands its slot on (see drainQueue). */
  queueSliceMs: number
  /**
   * The priority of bulk mail's queue runs: a batch's, and a connection's whose run ended with
   * mail still due (see drainQueue and expandBatch).
   */
  backlogPriority: number
  /**
   * Messages of one connection in flight at once: enough to keep its SMTP sessions busy while
   * other messages are being claimed and recorded (in rounds: see src/fast-path/rounds.ts).
   */
  lanes: number
  retry: RetryPolicy
  /**
   * How often jobs due later (a retry, the end of a quota window) are looked for; jobs due now
   * arrive at once through LISTEN/NOTIFY.
   */
  pollIntervalMs: number
  /** How often a connection whose server is out of reach is asked whether it answers again. */
  probeIntervalMs: number
  /** Webhook endpoints whose deliveries are sent at once in this process. */
  webhookConcurrency: number
  webhooks: WebhookPolicy
  /** Connection mailboxes read at once in this process. */
  mailboxConcurrency: number
  /** How batches' recipients are moved into the outbox, ahead of delivery. */
  expansion: ExpansionPolicy
}

/**
 * A connection's messages in flight at once by default: with five SMTP sessions, sixteen left the
 * sessions short of a message a quarter of the time at full speed (every lane in a claim or a
 * record round at once), thirty-two about one time in fifty.
 */
export const QUEUE_LANES = 32

/**
 * A queue run's slice: long enough that a run's start (reading the connection, filling its lanes)
 * is a small part of it, short enough that with every slot taken by connections with mail due for
 * minutes, a run asked for meanwhile waits about one slice for a slot.
 */
export const QUEUE_SLICE_MS = 1_000

const DEFAULT_OPTIONS: Omit<WorkerOptions, 'retry'> = {
  concurrency: 8,
  queueSliceMs: QUEUE_SLICE_MS,
  backlogPriority: BULK_PRIORITY,
  lanes: QUEUE_LANES,
  pollIntervalMs: 1_000,
  probeIntervalMs: PROBE_INTERVAL_MS,
  webhookConcurrency: 4,
  webhooks: DEFAULT_WEBHOOK_POLICY,
  mailboxConcurrency: 2,
  expansion: DEFAULT_EXPANSION,
}

/**
 * The background worker: graphile-worker jobs in the same PostgreSQL run the connections'
 * queues and the hourly retention purge, while a heartbeat lets other processes hand on this
 * one's work should it die.
 */
export async function startWorker(
  services: Services,
  overrides: Partial<WorkerOptions> = {},
): Promise<RunningWorker> {
  const options: WorkerOptions = {
    ...DEFAULT_OPTIONS,
    retry: defaultRetryPolicy(services.config.queueLifetimeHours),
    ...overrides,
  }
  const { log, sql } = services
  const claimant = new Claimant()
  const stopping = new AbortController()
  await registerProcess(sql, claimant.id)
  const sweep = async () => {
    const { dead, connections } = await beatAndSweep(sql, claimant)
    if (dead || connections) log.warn({ dead, connections }, 'work of stopped worker processes handed on')
  }
  await sweep()
  const heartbeat = setInterval(() => {
    sweep().catch((error) => log.error({ err: error.message }, 'worker heartbeat failed'))
  }, HEARTBEAT_MS)
  const stopStatistics = keepTableStatistics(services)

  const events = jobEvents(services, claimant)
  // Our own pools, so that their shutdown can be awaited (graphile-worker does not await the end
  // of a pool it made) and a connection ended by the server during shutdown is only logged.
  const lost = (error: Error) =>
    log.warn({ component: 'worker', err: error.message }, 'worker connection lost')
  const pools: pg.Pool[] = []
  // A runner of graphile-worker with a pool of its own, running only the tasks of `taskList`.
  const runner = (concurrency: number, taskList: TaskList, crontab?: string) => {
    const pool = new pg.Pool({ connectionString: services.databaseUrl, max: concurrency + 2 })
    pool.on('error', lost)
    pool.on('connect', (client) => client.on('error', lost))
    pools.push(pool)
    return run({
      pgPool: pool,
      concurrency,
      pollInterval: options.pollIntervalMs,
      noHandleSignals: true,
      events,
      logger: workerLogger(log),
      taskList: heldWhileRunning(taskList, claimant),
      ...(crontab ? { crontab } : {}),
    })
  }
  const runners = [
    await runner(
      options.concurrency,
      mailTasks(services, options, claimant, stopping.signal),
      // Hourly, so a plan's retention is kept to the hour; `fill` catches up a missed run once.
      `17 * * * * ${PURGE_TASK} ?fill=1h`,
    ),
    // Webhooks run in a runner of their own: an endpoint that hangs until its timeout holds one
    // of these slots, never one that sends mail.
    await runner(options.webhookConcurrency, {
      [WEBHOOK_TASK]: async (payload) => {
        const { endpointId } = payload as WebhookRunPayload
        await deliverWebhooks(services, endpointId, claimant, options.webhooks, stopping.signal)
      },
    }),
    // So do connection mailboxes, each read every minute: a slow IMAP server holds one of these
    // slots, never one that sends mail.
    await runner(options.mailboxConcurrency, mailboxTasks(services), `* * * * * ${MAILBOXES_TASK}`),
  ]
  return {
    async stop() {
      stopping.abort()
      clearInterval(heartbeat)
      stopStatistics()
      await Promise.all(runners.map((r) => r.stop()))
      await Promise.all(pools.map((p) => endWhenQuiet(p, RECORDING_END_MS)))
      // None of its tasks runs now: a job still locked in its name is one whose end could not be
      // recorded, and its queue is the next worker's at once, not once the lock looks abandoned.
      await unlockJobWorkers(sql, [...claimant.jobWorkers])
      await unregisterProcess(sql, claimant.id)
    },
  }
}

/** The events of a process's runners: each job worker pool is recorded in the claimant's name. */
function jobEvents({ log, sql }: Services, claimant: Claimant): WorkerEvents {
  const events: WorkerEvents = new EventEmitter()
  lookAgainAfterHiddenJobs(events)
  // graphile-worker 0.17 locks jobs in the name of its worker pool, not of each worker.
  events.on('pool:create', ({ workerPool }) => {
    claimant.jobWorkers.add(workerPool.id)
    recordJobWorker(sql, claimant.id, workerPool.id).catch((error) =>
      log.warn({ err: error.message }, 'could not record the job worker pool'),
    )
  })
  return events
}

/** The tasks of the runner that sends mail: the queues, the probes, batch expansion, the purge. */
function mailTasks(
  services: Services,
  options: WorkerOptions,
  claimant: Claimant,
  stopping: AbortSignal,
): TaskList {
  const { log, sql } = services
  return {
    [QUEUE_TASK]: async (payload) => {
      const { connectionId } = payload as QueueRunPayload
      await drainQueue(services, connectionId, {
        lanes: options.lanes,
        claimant,
        policy: options.retry,
        stopping,
        sliceMs: options.queueSliceMs,
        backlogPriority: options.backlogPriority,
      })
    },
    [PROBE_TASK]: async (payload) => {
      const { connectionId } = payload as ProbePayload
      const result = await probeConnection(services, connectionId, {
        intervalMs: options.probeIntervalMs,
        maxAgeMs: options.retry.maxAgeMs,
      })
      if (result === 'resumed') log.info({ connectionId }, 'connection resumed: its server answers again')
      if (result === 'paused') log.warn({ connectionId }, 'connection paused: its server stays out of reach')
    },
    [EXPAND_TASK]: async (payload) => {
      const links = { secret: services.secret, publicUrl: services.config.publicUrl }
      await expandBatch(
        { sql, links },
        payload as ExpansionPayload,
        options.expansion,
        options.backlogPriority,
      )
    },
    [PURGE_TASK]: async () => {
      const purged = await purgeExpired(sql)
      log.info({ purged }, 'expired outbox records and counters purged')
    },
  }
}

/** The tasks of the runner that reads mailboxes: the minute's requests, and each connection's reading. */
function mailboxTasks(services: Services): TaskList {
  const { sql, secret, log, metrics } = services
  const deps = { sql, secret, log, metrics, allowPrivate: services.config.allowPrivateSmtpHosts }
  return {
    [MAILBOXES_TASK]: async () => {
      await scheduleMailboxReads(sql)
    },
    [MAILBOX_TASK]: async (payload) => {
      const { connectionId } = payload as MailboxReadPayload
      await readMailbox(deps, connectionId)
    },
  }
}

/** How long a job stays held after its task ends: graphile-worker records the end meanwhile. */
const RECORDING_END_MS = 1_000

/**
 * Each task holds its job in the claimant's name while it runs (see unlockJobsNotRunning): a
 * job this process's workers lock that no task holds is one whose end could not be recorded.
 */
function heldWhileRunning(taskList: TaskList, claimant: Claimant): TaskList {
  const held: TaskList = {}
  for (const [name, task] of Object.entries(taskList)) {
    if (!task) continue
    held[name] = async (payload: unknown, helpers: JobHelpers) => {
      const id = Number(helpers.job.id)
      claimant.jobs.hold(id)
      try {
        await task(payload, helpers)
      } finally {
        setTimeout(() => claimant.jobs.letGo(id), RECORDING_END_MS).unref()
      }
    }
  }
  return held
}
