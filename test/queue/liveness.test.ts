/**
 * A connection's queue keeps running whatever became of one of its graphile-worker jobs: a run
 * that graphile-worker gave up on (attempts used up) keeps its key, and neither a new enqueue
 * nor the liveness sweep may take that dead job for a run still coming. And a message claimed in
 * a live process's name that the process lost track of goes back to the queue.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it } from 'vitest'
import { scheduleQueueRun } from '../../src/db/jobs.ts'
import { registerProcess } from '../../src/db/worker-processes.ts'
import { beatAndSweep, Claimant, HEARTBEAT_MS, type HeldIds } from '../../src/queue/liveness.ts'
import type { RunningWorker } from '../../src/worker/worker.ts'
import { useTestApp } from '../support/app.ts'
import {
  enqueued,
  outboxRecord,
  startWorkerAhead,
  TEST_RETRY,
  waitFor,
  waitForOutboxStatus,
} from '../support/queue.ts'
import { type Sender, startSender } from '../support/sending.ts'

// A database of its own for each test: the sweep must find only that test's stranded mail.
const app = useTestApp({}, { each: true })

const workersAhead: RunningWorker[] = []
// Stopped before the test's app closes (after hooks run last registered first).
afterEach(async () => {
  await Promise.all(workersAhead.splice(0).map((w) => w.stop()))
})

/**
 * A worker whose clock runs a heartbeat ahead: due mail with no run coming already looks
 * stranded to the sweep it runs as it starts, rather than to one a heartbeat later.
 */
async function workerAHeartbeatLater(): Promise<void> {
  workersAhead.push(
    await startWorkerAhead(app.db.url, HEARTBEAT_MS, { retry: TEST_RETRY, pollIntervalMs: 100 }),
  )
}

/** Makes the connection's queue-run job one graphile-worker has failed permanently. */
async function killQueueRun(s: Sender): Promise<void> {
  const dead = await app.services.sql`
    update graphile_worker._private_jobs set attempts = max_attempts, last_error = 'gave up'
    where key = ${`queue:${s.connectionId}`} returning id`
  expect(dead).toHaveLength(1)
}

describe('a queue run graphile-worker gave up on', () => {
  it('does not stop a later enqueue from getting a run of its own', async () => {
    const s = await startSender(app, 'dead-run', { plan: 'pro' })
    const first = await enqueued(app, s.key)
    await killQueueRun(s)
    const second = await enqueued(app, s.key)
    await app.worker()
    await waitForOutboxStatus(app, s.accountId, first, 'sent')
    await waitForOutboxStatus(app, s.accountId, second, 'sent')
    expect(s.sink.messages).toHaveLength(2)
  })

  it('is not taken for a run coming: the liveness sweep gives the stranded mail a run', async () => {
    const s = await startSender(app, 'dead-run', { plan: 'pro' })
    const id = await enqueued(app, s.key)
    await killQueueRun(s)
    // Due mail is stranded once it has waited a heartbeat with no run coming.
    await workerAHeartbeatLater()
    await waitForOutboxStatus(app, s.accountId, id, 'sent', 20_000)
    expect(s.sink.messages).toHaveLength(1)
  })
})

describe('a queue run that failed (the database went away, say)', () => {
  it('is not left to wait out a long back-off: the sweep gives its due mail a run now', async () => {
    const s = await startSender(app, 'failed-run', { plan: 'pro' })
    const id = await enqueued(app, s.key)
    // graphile-worker's back-off after a few failures: the next try ten minutes away.
    const failed = await app.services.sql`
      update graphile_worker._private_jobs set attempts = 4, last_error = 'connect ECONNREFUSED',
        run_at = now() + interval '10 minutes'
      where key = ${`queue:${s.connectionId}`} returning id`
    expect(failed).toHaveLength(1)
    await workerAHeartbeatLater()
    await waitForOutboxStatus(app, s.accountId, id, 'sent', 20_000)
    expect(s.sink.messages).toHaveLength(1)
  })

  it('a run waiting without a failure (a quota window, a pause) is left as it is', async () => {
    const s = await startSender(app, 'waiting-run', { plan: 'pro' })
    const id = await enqueued(app, s.key)
    await app.services.sql`
      update graphile_worker._private_jobs set run_at = now() + interval '10 minutes'
      where key = ${`queue:${s.connectionId}`}`
    // Its first sweep, as it starts, sees the mail waiting a heartbeat; a heartbeat on, a second
    // sweep has looked too, and a run asked for by either would have sent the mail by then.
    await workerAHeartbeatLater()
    await sleep(HEARTBEAT_MS + 1_000)
    expect(await outboxRecord(app, s.accountId, id)).toMatchObject({ status: 'queued', attempts: 0 })
  })
})

describe('a run asked for while the connection’s run is under way', () => {
  it('is not put off by the running one asking, as it ends, for a later run', async () => {
    const s = await startSender(app, 'resumed-run', { plan: 'pro' })
    const id = await enqueued(app, s.key)
    const key = `queue:${s.connectionId}`
    // No worker: the queued mail's run is taken to be under way, locked as graphile-worker does.
    const locked = await app.services.sql`
      update graphile_worker._private_jobs set locked_at = now(), locked_by = 'another-process'
      where key = ${key} returning id`
    expect(locked).toHaveLength(1)
    // A resume asks for a run now while the run, which read the connection paused, asks for its
    // next one in 15 minutes: that request starts before the resume commits and ends after.
    let later: Promise<void> | undefined
    await app.services.sql.begin(async (tx) => {
      await scheduleQueueRun(tx, s.connectionId)
      later = scheduleQueueRun(app.services.sql, s.connectionId, 15 * 60_000)
      await sleep(300)
    })
    await later
    const waiting = await app.services.sql<{ soon: boolean }[]>`
      select run_at <= now() + interval '1 second' as soon from graphile_worker.jobs
      where key = ${key} and locked_at is null`
    expect(waiting).toEqual([{ soon: true }])
    // And the mail goes out at once once the locked run is gone.
    await app.services.sql`delete from graphile_worker._private_jobs where id = ${locked[0]?.id}`
    await app.worker()
    await waitForOutboxStatus(app, s.accountId, id, 'sent')
  })
})

describe('a job its own process’s worker still locks though no task of it runs', () => {
  it('is unlocked by that process’s sweep (its end could not be recorded), and the queue goes on', async () => {
    const s = await startSender(app, 'unrecorded-end', { plan: 'pro' })
    await app.worker()
    const pool = await waitFor('the job worker the worker process recorded', async () => {
      const [row] = await app.services.sql<{ ids: string[] }[]>`
        select job_worker_ids as ids from worker_processes`
      return row?.ids[0]
    })
    // A run of the queue whose end graphile-worker could not record (the database was away):
    // left locked in the name of this process's job worker, with its named queue.
    const key = `queue:${s.connectionId}`
    await app.services.sql`
      select graphile_worker.add_job('deliver_queue', json_build_object('connectionId', ${s.connectionId}::int),
        run_at => now() + interval '1 hour', queue_name => ${key}, job_key => ${key})`
    const locked = await app.services.sql`
      with j as (
        update graphile_worker._private_jobs set locked_at = now() - interval '1 minute', locked_by = ${pool},
          run_at = now()
        where key = ${key} returning job_queue_id)
      update graphile_worker._private_job_queues q set locked_at = now() - interval '1 minute', locked_by = ${pool}
      from j where q.id = j.job_queue_id returning q.id`
    expect(locked).toHaveLength(1)
    const id = await enqueued(app, s.key)
    await waitForOutboxStatus(app, s.accountId, id, 'sent', 20_000)
    expect(s.sink.messages).toHaveLength(1)
  })
})

/** Where a kind of claim is kept, and what its sweep puts it back as. */
interface ClaimKind {
  table: 'outbox' | 'webhook_deliveries'
  claimedAt: 'updated_at' | 'claimed_at'
  held: (claimant: Claimant) => HeldIds
}

/**
 * Claims three rows in a live process's name, as when a claim commits but its answer is lost
 * with the database connection: one a while ago that the process does not hold, one as old
 * that it holds, one just now. Then runs that process's sweep and answers each row's state.
 */
async function sweepAfterLostClaims(kind: ClaimKind, [lost, held, fresh]: number[]) {
  const { sql } = app.services
  const claimant = new Claimant()
  await registerProcess(sql, claimant.id)
  const claim = (id: number | undefined, agoMs: number) => sql`
    update ${sql(kind.table)} set status = 'sending', claimed_by = ${claimant.id}, attempts = attempts + 1,
      ${sql(kind.claimedAt)} = now() - ${agoMs} * interval '1 millisecond'
    where id = ${id ?? 0}`
  await claim(lost, 2 * HEARTBEAT_MS)
  await claim(held, 2 * HEARTBEAT_MS)
  kind.held(claimant).hold(held ?? 0)
  await claim(fresh, 0)
  await beatAndSweep(sql, claimant)
  const state = async (id: number | undefined) =>
    (
      await sql<{ status: string; claimed_by: string | null }[]>`
        select status, claimed_by from ${sql(kind.table)} where id = ${id ?? 0}`
    )[0]
  return { claimant, lost: await state(lost), held: await state(held), fresh: await state(fresh) }
}

describe('a claim its own live process lost track of', () => {
  it('is queued again by that process’s sweep once a heartbeat old; held or newer claims are not', async () => {
    const s = await startSender(app, 'lost-claim', { plan: 'pro' })
    const ids = [await enqueued(app, s.key), await enqueued(app, s.key), await enqueued(app, s.key)]
    const swept = await sweepAfterLostClaims(
      { table: 'outbox', claimedAt: 'updated_at', held: (c) => c.messages },
      ids,
    )
    expect(swept.lost).toEqual({ status: 'queued', claimed_by: null })
    expect(swept.held).toEqual({ status: 'sending', claimed_by: swept.claimant.id })
    expect(swept.fresh).toEqual({ status: 'sending', claimed_by: swept.claimant.id })

    // And it goes out with the next run the sweep asked for, once.
    await app.worker()
    await waitForOutboxStatus(app, s.accountId, ids[0] ?? 0, 'sent', 20_000)
    expect(s.sink.messages).toHaveLength(1)
  })

  it('the same for a webhook delivery: put back as pending', async () => {
    const s = await startSender(app, 'lost-delivery', { plan: 'pro' })
    const hook = await app.request('/webhooks', {
      key: s.key,
      body: { url: 'http://127.0.0.1:9/hooks', events: ['email.sent'] },
    })
    expect(hook.status).toBe(201)
    for (let i = 0; i < 3; i++) {
      const sent = await app.request('/send', {
        key: s.key,
        body: { to: 'ann@example.com', subject: 'Hi', text_body: 'x' },
      })
      expect(sent.status).toBe(200)
    }
    const deliveries = await app.services.sql<{ id: number }[]>`select id from webhook_deliveries order by id`
    expect(deliveries).toHaveLength(3)
    const swept = await sweepAfterLostClaims(
      { table: 'webhook_deliveries', claimedAt: 'claimed_at', held: (c) => c.deliveries },
      deliveries.map((d) => d.id),
    )
    expect(swept.lost).toEqual({ status: 'pending', claimed_by: null })
    expect(swept.held).toEqual({ status: 'sending', claimed_by: swept.claimant.id })
    expect(swept.fresh).toEqual({ status: 'sending', claimed_by: swept.claimant.id })
  })
})
