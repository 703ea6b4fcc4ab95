/**
 * What the queued-delivery tests (POST /enqueue and the worker) share: the service on a database
 * of its own with an injected clock, a worker with short retry delays, POST /enqueue, and waits
 * on the outbox as `mailroom outbox list` shows it.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import type { OutboxRecord } from '../../src/db/outbox-types.ts'
import { DEAD_AFTER_MS, HEARTBEAT_MS } from '../../src/queue/liveness.ts'
import { retryPolicy } from '../../src/queue/retry-policy.ts'
import { listOutbox } from '../../src/sending/outbox-views.ts'
import type { Services } from '../../src/services.ts'
import { type RunningWorker, startWorker, type WorkerOptions } from '../../src/worker/worker.ts'
import { openTestServices, startTestApp, TEST_SECRET, type TestApp } from './app.ts'
import { type Body, type Reply, replyOf } from './sending.ts'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** ISO 8601 with milliseconds and Z, as `queuedAt` must be. */
export const ISO_MILLIS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

/**
 * Retries after 200 ms doubling (a test can change the sink's behaviour between two attempts),
 * giving up after 3 transient failures; push-back waits 100 ms doubling.
 */
export const TEST_RETRY = retryPolicy(200, 3, 100)

/**
 * A test app whose mailroom_now() reaches the top of an hour `leadMs` from now, so that a quota
 * window ends during the test; `boundary` is that moment in real time.
 */
export async function startAppBeforeTopOfHour(leadMs: number): Promise<{ app: TestApp; boundary: number }> {
  const HOUR = 3_600_000
  const boundary = Date.now() + leadMs
  const topOfHour = Math.ceil(boundary / HOUR) * HOUR
  return { app: await startTestApp({}, { clockOffsetMs: topOfHour - boundary }), boundary }
}

/** A worker in this process with the tests' short retry delays; stop it before closing the app. */
export function startTestWorker(
  services: Services,
  options: Partial<WorkerOptions> = {},
): Promise<RunningWorker> {
  // Retries a few hundred milliseconds apart are looked for as often.
  return startWorker(services, { retry: TEST_RETRY, pollIntervalMs: 100, ...options })
}

/**
 * How long after its last heartbeat a killed worker process is taken for dead at the latest: its
 * silence must pass DEAD_AFTER_MS, and the next sweep comes a heartbeat after.
 */
export const TAKEN_FOR_DEAD_MS = DEAD_AFTER_MS + HEARTBEAT_MS

/**
 * A worker in this process whose clock (mailroom_now()) runs `aheadMs` ahead: started now, it
 * sees what a worker started at once would see that much later. Stopping it closes its services.
 */
export async function startWorkerAhead(
  databaseUrl: string,
  aheadMs: number,
  options: Partial<WorkerOptions> = {},
): Promise<RunningWorker> {
  const services = await openTestServices(databaseUrl, { clockOffsetMs: aheadMs })
  const worker = await startWorker(services, options).catch(async (error) => {
    await services.close()
    throw error
  })
  return {
    async stop() {
      await worker.stop()
      await services.close()
    },
  }
}

/**
 * `databaseUrl` for a worker process restarted at once, as it runs once the killed ones are taken
 * for dead (see startWorkerOnceDead): the clock offset goes as a setting of every session it opens.
 */
export function urlOnceDead(databaseUrl: string): string {
  const url = new URL(databaseUrl)
  url.searchParams.set('mailroom.clock_offset_ms', String(TAKEN_FOR_DEAD_MS))
  return url.toString()
}

/**
 * A worker in this process, restarted at once after a worker process was killed, as it runs
 * once that process is taken for dead, so that its first sweep hands the killed process's work
 * on rather than the test waiting out the silence.
 */
export function startWorkerOnceDead(
  databaseUrl: string,
  options: Partial<WorkerOptions> = {},
): Promise<RunningWorker> {
  return startWorkerAhead(databaseUrl, TAKEN_FOR_DEAD_MS, options)
}

let subjectSeq = 0

/** A valid email request; `extra` overrides or adds fields. */
export function email(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { to: 'rcpt@example.com', subject: `Queued ${++subjectSeq}`, text_body: 'Hello', ...extra }
}

/** POST /enqueue with the API key `apiKey`. */
export async function postEnqueue(app: TestApp, apiKey: string, body: unknown): Promise<Reply> {
  return replyOf(await app.request('/enqueue', { method: 'POST', key: apiKey, body }))
}

/** An enqueue expected to be accepted; returns its outbox id. */
export async function enqueued(app: TestApp, apiKey: string, body: unknown = email()): Promise<number> {
  const reply = await postEnqueue(app, apiKey, body)
  if (reply.status !== 200) throw new Error(`enqueue refused: ${reply.status} ${JSON.stringify(reply.body)}`)
  return (reply.body as Body).outboxId as number
}

/** The account's outbox record `id` as the operator sees it (listOutbox, as `mailroom outbox list`). */
export async function outboxRecord(app: TestApp, accountId: number, id: number): Promise<OutboxRecord> {
  const { records } = await listOutbox(app.services.sql, accountId, {}, { size: 10_000 })
  const record = records.find((r) => r.id === id)
  if (!record) throw new Error(`no outbox record ${id} for account ${accountId}`)
  return record
}

/** Polls `check` until it returns a value other than undefined, or throws after `timeoutMs`. */
export async function waitFor<T>(
  what: string | (() => string | Promise<string>),
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 5_000,
  intervalMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) {
      const description = typeof what === 'string' ? what : await what()
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}`)
    }
    await sleep(intervalMs)
  }
}

/**
 * Checks what `read()` sees, again and again until `deadline` (epoch ms). A read that completes
 * at or after the deadline may have seen what comes after it, so it ends the loop unchecked:
 * on a loaded machine one read can take longer than any margin. Returns how many were checked.
 */
export async function holdsUntil<T>(
  deadline: number,
  read: () => Promise<T>,
  check: (value: T) => void,
): Promise<number> {
  let checked = 0
  for (;;) {
    const value = await read()
    if (Date.now() >= deadline) return checked
    check(value)
    checked++
    await sleep(100)
  }
}

/** Reads `read()` until its value satisfies `condition`; returns that value. */
export function waitForMatch<T>(
  label: string,
  read: () => Promise<T>,
  condition: (value: T) => boolean,
  timeoutMs: number,
  intervalMs?: number,
): Promise<T> {
  let last: T | undefined
  return waitFor(
    () => `${label} to match (last seen: ${JSON.stringify(last)})`,
    async () => {
      last = await read()
      return condition(last) ? last : undefined
    },
    timeoutMs,
    intervalMs,
  )
}

/** Waits until the outbox record satisfies `condition`; returns it. */
export function waitForOutbox(
  app: TestApp,
  accountId: number,
  id: number,
  condition: (record: OutboxRecord) => boolean,
  timeoutMs = 5_000,
): Promise<OutboxRecord> {
  return waitForMatch(`outbox record ${id}`, () => outboxRecord(app, accountId, id), condition, timeoutMs)
}

/** Waits until the outbox record has reached `status`; returns it. */
export function waitForOutboxStatus(
  app: TestApp,
  accountId: number,
  id: number,
  status: OutboxRecord['status'],
  timeoutMs = 5_000,
): Promise<OutboxRecord> {
  return waitForOutbox(app, accountId, id, (r) => r.status === status, timeoutMs)
}

/**
 * The graphile-worker runs keyed `key` (`queue:<connection id>`, `webhook:<endpoint id>`),
 * running or waiting, oldest first: whether each is running.
 */
export async function keyedRuns(app: TestApp, key: string): Promise<boolean[]> {
  const runs = await app.services.sql<{ running: boolean }[]>`
    select locked_at is not null as running from graphile_worker.jobs where queue_name = ${key} order by id`
  return runs.map((r) => r.running)
}

/** How many of the account's outbox records are in each status. */
export async function outboxStatusCounts(app: TestApp, accountId: number): Promise<Record<string, number>> {
  const rows = await app.services.sql<{ status: string; n: number }[]>`
    select status, count(*)::int as n from outbox where account_id = ${accountId} group by status`
  return Object.fromEntries(rows.map((r) => [r.status, r.n]))
}

// --- The real `mailroom` binary -----------------------------------------------------------------

/** The environment of a `mailroom` process on the test database `databaseUrl`. */
export function mailroomEnv(databaseUrl: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    MAILROOM_SECRET: TEST_SECRET,
    MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS: '1',
    LOG_LEVEL: 'warn',
    ...extra,
  }
  for (const name of ['PORT', 'HOST', 'MAILROOM_DATA_DIR']) if (!(name in extra)) delete env[name]
  return env
}

export interface MailroomProcess {
  child: ChildProcess
  /** Everything it wrote on stdout and stderr so far. */
  output(): string
  exited(): boolean
  /** SIGTERM, then SIGKILL if it has not exited after `graceMs`. */
  stop(graceMs?: number): Promise<void>
}

/** Spawns `node bin/mailroom.js ...args` (or another entry, such as a build) from the project root. */
export function spawnMailroom(
  args: string[],
  env: NodeJS.ProcessEnv,
  entry = 'bin/mailroom.js',
): MailroomProcess {
  const child = spawn(process.execPath, [entry, ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const chunks: string[] = []
  child.stdout?.on('data', (chunk: Buffer) => chunks.push(chunk.toString()))
  child.stderr?.on('data', (chunk: Buffer) => chunks.push(chunk.toString()))
  const exited = () => child.exitCode !== null || child.signalCode !== null
  return {
    child,
    output: () => chunks.join(''),
    exited,
    async stop(graceMs = 15_000) {
      if (exited()) return
      const done = once(child, 'exit')
      child.kill('SIGTERM')
      const timeout = sleep(graceMs).then(() => 'timeout' as const)
      if ((await Promise.race([done, timeout])) === 'timeout') {
        child.kill('SIGKILL')
        await done
      }
    },
  }
}

/** Polls `/health` until the process at `url` answers, failing early if it exits. */
export async function waitHealthy(child: MailroomProcess, url: string, timeoutMs = 60_000): Promise<void> {
  await waitFor(
    () => `${url}/health (output: ${child.output()})`,
    async () => {
      if (child.exited()) throw new Error(`mailroom exited: ${child.output()}`)
      const ok = await fetch(`${url}/health`).then(
        (res) => res.ok,
        () => false,
      )
      return ok ? true : undefined
    },
    timeoutMs,
    100,
  )
}

/**
 * Runs a real worker process (`mailroom start --worker-only`) on `databaseUrl` until `sink` has
 * `count` messages, then kills it with SIGKILL. Returns how many messages had arrived by then.
 */
export async function killWorkerProcessAfter(
  databaseUrl: string,
  sink: { messages: unknown[] },
  count: number,
): Promise<number> {
  const worker = spawnMailroom(['start', '--worker-only'], mailroomEnv(databaseUrl))
  try {
    await waitFor(
      () => `${count} messages from the worker process (output: ${worker.output()})`,
      () => (sink.messages.length >= count ? true : undefined),
      30_000,
      5,
    )
  } finally {
    const exited = once(worker.child, 'exit')
    worker.child.kill('SIGKILL')
    await exited
  }
  return sink.messages.length
}
