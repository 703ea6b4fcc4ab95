/**
 * Contract tests for crash safety and the process split (docs/decisions.md,
 * "Delivery guarantees"): `kill -9` of a real worker process in the middle of 200 queued emails
 * loses none, delivery resumes within a minute of a worker running again, and the only
 * duplicates are re-sends of the same message with the same Message-ID. `mailroom start
 * --no-worker` serves without sending; `--worker-only` sends without serving.
 */
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { freePort } from '../../src/net/free-port.ts'
import { QUEUE_LANES } from '../../src/worker/worker.ts'
import { useTestApp } from '../support/app.ts'
import {
  email,
  enqueued,
  killWorkerProcessAfter,
  type MailroomProcess,
  mailroomEnv,
  outboxStatusCounts,
  spawnMailroom,
  startWorkerOnceDead,
  TAKEN_FOR_DEAD_MS,
  waitFor,
  waitForOutboxStatus,
  waitHealthy,
} from '../support/queue.ts'
import { replyOf, startSender } from '../support/sending.ts'

const app = useTestApp()
const processes: MailroomProcess[] = []
const stops: (() => Promise<void>)[] = []

async function stopAll(): Promise<void> {
  await Promise.all(processes.splice(0).map((p) => p.stop()))
  for (const stop of stops.splice(0)) await stop()
}

// Each test starts with no worker of its own running: the split test must not see one.
afterEach(stopAll)

afterAll(async () => {
  await stopAll()
})

function spawnWorkerOnly(extra: Record<string, string> = {}): MailroomProcess {
  const child = spawnMailroom(['start', '--worker-only'], mailroomEnv(app.db.url, extra))
  processes.push(child)
  return child
}

describe('kill -9 during a run of 200 queued emails', () => {
  it('delivers every one after a restart, within a minute; a recipient sent twice got the same Message-ID', {
    timeout: 120_000,
  }, async () => {
    const TOTAL = 200
    const s = await startSender(app, 'crash', { plan: 'pro', behaviour: { dataDelayMs: 30 } })
    const recipients = Array.from({ length: TOTAL }, (_, i) => `crash${i}@example.com`)
    for (let i = 0; i < TOTAL; i += 50) {
      await Promise.all(recipients.slice(i, i + 50).map((to) => enqueued(app, s.key, email({ to }))))
    }

    const atKill = await killWorkerProcessAfter(app.db.url, s.sink, 30)
    expect(atKill, 'killed in the middle of the run').toBeLessThan(TOTAL)

    // The worker restarted at once runs on a clock TAKEN_FOR_DEAD_MS ahead: what remains of its
    // minute is what a real restart would have left once the killed process was taken for dead.
    const restartedAt = Date.now()
    const within = 60_000 - TAKEN_FOR_DEAD_MS
    const second = await startWorkerOnceDead(app.db.url)
    stops.push(() => second.stop())
    // Re-sent messages arrive twice: wait for every recipient, not for a count of messages.
    const missing = () => {
      const received = new Set(s.sink.messages.flatMap((m) => m.envelope.to))
      return recipients.filter((r) => !received.has(r))
    }
    await waitFor(
      async () =>
        `every recipient; missing ${missing().length}, outbox ${JSON.stringify(await outboxStatusCounts(app, s.accountId))}`,
      () => (missing().length === 0 ? true : undefined),
      within,
      50,
    )
    expect(Date.now() - restartedAt).toBeLessThan(within)

    // Every record ends sent, and what arrived carries the Message-ID it recorded.
    const rows = await waitFor(
      'every outbox record sent',
      async () => {
        const all = await app.services.sql<{ status: string; to: string; message_id: string }[]>`
          select status, to_addresses[1] as to, message_id from outbox where account_id = ${s.accountId}`
        return all.length === TOTAL && all.every((r) => r.status === 'sent') ? all : undefined
      },
      10_000,
      100,
    )
    const messageIdOf = new Map(rows.map((r) => [r.to, r.message_id]))
    const byRecipient = new Map<string, string[]>()
    for (const m of s.sink.messages) {
      const to = m.envelope.to[0] as string
      byRecipient.set(to, [...(byRecipient.get(to) ?? []), m.headers.get('message-id') as string])
    }
    for (const [to, ids] of byRecipient) {
      expect(new Set(ids), `Message-IDs received by ${to}`).toEqual(new Set([messageIdOf.get(to)]))
    }
  })
})

describe('SIGTERM', () => {
  it('drains a worker process: the message in hand is finished, the rest stays queued and unlocked, the process exits', {
    timeout: 60_000,
  }, async () => {
    const s = await startSender(app, 'drain', { plan: 'pro', behaviour: { dataDelayMs: 1_500 } })
    // More than one connection's lanes can hold at once: some must still be queued at the end.
    const lanes = QUEUE_LANES
    for (let i = 0; i < lanes * 2; i++) await enqueued(app, s.key, email({ to: `drain${i}@example.com` }))
    const worker = spawnWorkerOnly()
    const inFlight = await waitFor(
      () => `a message in flight (output: ${worker.output()})`,
      async () => {
        const rows = await app.services.sql<{ id: number }[]>`
          select id from outbox where account_id = ${s.accountId} and status = 'sending'`
        return rows.length > 0 ? rows.map((r) => r.id) : undefined
      },
      30_000,
      20,
    )
    const exited = once(worker.child, 'exit')
    worker.child.kill('SIGTERM')
    const [code] = await exited
    expect(code, worker.output()).toBe(0)

    const counts = await outboxStatusCounts(app, s.accountId)
    expect(counts.sending, 'nothing left in flight').toBeUndefined()
    expect(counts.failed, 'nothing failed').toBeUndefined()
    for (const id of inFlight) {
      expect(
        (await app.services.sql<{ status: string }[]>`select status from outbox where id = ${id}`)[0],
      ).toEqual({
        status: 'sent',
      })
    }
    expect(counts.sent).toBe(s.sink.messages.length)
    expect(counts.queued).toBeGreaterThan(0)
    // Its runs' ends are recorded before it exits (src/worker/quiet-pool.ts): no job, and no
    // connection's queue, stays locked for the next worker to wait out.
    expect(
      await app.services.sql`
        select 'job' as what, id::text, locked_by from graphile_worker._private_jobs where locked_by is not null
        union all
        select 'queue', queue_name, locked_by from graphile_worker._private_job_queues where locked_by is not null`,
      'nothing left locked',
    ).toEqual([])
  })
})

describe('mailroom start: API and worker split', () => {
  it('--no-worker serves the API but sends nothing queued; --worker-only then sends it without serving', {
    timeout: 90_000,
  }, async () => {
    const s = await startSender(app, 'split', { plan: 'pro' })
    const apiPort = await freePort()
    const api = spawnMailroom(
      ['start', '--no-worker'],
      mailroomEnv(app.db.url, { PORT: String(apiPort), HOST: '127.0.0.1' }),
    )
    processes.push(api)
    const apiUrl = `http://127.0.0.1:${apiPort}`
    await waitHealthy(api, apiUrl, 30_000)

    const res = await fetch(`${apiUrl}/v1/enqueue`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(email({ to: 'split@example.com' })),
    })
    const reply = await replyOf(res)
    expect(reply.status, JSON.stringify(reply.body)).toBe(200)
    const id = reply.body.outboxId as number
    await sleep(2_000)
    expect(s.sink.messages).toHaveLength(0)
    expect(await outboxStatusCounts(app, s.accountId)).toEqual({ queued: 1 })

    const workerPort = await freePort()
    const worker = spawnWorkerOnly({ PORT: String(workerPort), HOST: '127.0.0.1' })
    await s.sink.waitForMessages(1, 30_000)
    expect(s.sink.messages[0]?.envelope.to).toEqual(['split@example.com'])
    await waitForOutboxStatus(app, s.accountId, id, 'sent')
    expect(worker.exited()).toBe(false)
    // The worker-only process does not serve the API on its PORT.
    await expect(fetch(`http://127.0.0.1:${workerPort}/health`)).rejects.toThrow()
  })
})
