/**
 * Automatic pauses read the provider fairly: messages failing side by side in one outage are one
 * failure; while a connection's server is out of reach one probe speaks for it, and the mail
 * behind it waits without spending tries of its own; a connection paused because its server was
 * out of reach is probed and resumed as soon as the server answers, rather than held for the full
 * pause; and when a pause ends, by a probe or by hand, all the waiting mail is due at once.
 */
import { describe, expect, it } from 'vitest'
import { pauseConnection, resumeConnection } from '../../src/connections/connections.ts'
import { retryPolicy } from '../../src/queue/retry-policy.ts'
import { useTestApp } from '../support/app.ts'
import { email, enqueued, outboxStatusCounts, waitFor, waitForOutboxStatus } from '../support/queue.ts'
import { postSend, type Sender, startSender } from '../support/sending.ts'
import type { SmtpSink } from '../support/smtp-sink.ts'

const app = useTestApp({}, { each: true })

interface ConnectionState {
  consecutive_failures: number
  paused: boolean
  paused_by: string | null
  pause_reason: string | null
}

async function state(s: Sender): Promise<ConnectionState> {
  const [row] = await app.services.sql<ConnectionState[]>`
    select consecutive_failures, coalesce(paused_until > mailroom_now(), false) as paused, paused_by, pause_reason
    from connections where id = ${s.connectionId}`
  if (!row) throw new Error(`no connection ${s.connectionId}`)
  return row
}

/** The server comes back where it was, with the same login. */
function restart(old: SmtpSink): Promise<SmtpSink> {
  return app.sink({ port: old.port, host: old.host, username: old.username, password: old.password })
}

/** Pauses the connection the way five unreachable sends a minute apart do. */
async function pauseUnreachable(s: Sender): Promise<void> {
  for (let i = 0; i < 5; i++) {
    expect((await postSend(app, s.key, email())).status).toBe(500)
    await app.services.sql`
      update connections set failure_window_until = failure_window_until - interval '61 seconds'
      where id = ${s.connectionId}`
  }
  expect(await state(s)).toMatchObject({
    paused: true,
    paused_by: 'unreachable',
    pause_reason: expect.any(String),
  })
}

/** A minute passes for the probe: its job is due now. */
async function probeNow(s: Sender): Promise<void> {
  const due = await app.services.sql`
    update graphile_worker._private_jobs set run_at = now() where key = ${`probe:${s.connectionId}`} returning id`
  expect(due, 'a probe is scheduled').toHaveLength(1)
}

/** What the outage cost each of the account's messages: SMTP attempts, and tries of its own spent. */
async function costs(s: Sender): Promise<{ attempts: number; failures: number }[]> {
  return app.services.sql<{ attempts: number; failures: number }[]>`
    select (select count(*)::int from outbox_attempts a where a.outbox_id = o.id) as attempts, o.failures
    from outbox o where o.account_id = ${s.accountId} order by o.id`
}

/** Waits until the worker holds none of the account's messages. */
async function noneInFlight(s: Sender): Promise<void> {
  await waitFor('no message in flight', async () =>
    (await outboxStatusCounts(app, s.accountId)).sending ? undefined : true,
  )
}

/**
 * Queued messages that had each been waiting out a back-off of their own (minutes away, as after
 * earlier failures), on a connection whose queue will not look at them before then.
 */
async function waitingOutBackOffs(s: Sender, count: number): Promise<number[]> {
  const ids: number[] = []
  for (let i = 0; i < count; i++) ids.push(await enqueued(app, s.key, email()))
  await app.services.sql`
    update outbox set failures = 1, next_attempt_at = mailroom_now() + (id - ${ids[0] as number} + 3) * interval '1 minute'
    where id = any(${ids}::int[])`
  return ids
}

/**
 * Only the messages in flight when the outage was found met it (one per lane at most), and at
 * most the one that found it spent a try; all of them still wait in the queue.
 */
async function expectWithinBudget(s: Sender, queued: number, lanes: number): Promise<void> {
  const spent = await costs(s)
  expect(spent).toHaveLength(queued)
  expect(spent.reduce((n, c) => n + c.attempts, 0)).toBeLessThanOrEqual(lanes)
  expect(spent.reduce((n, c) => n + c.failures, 0)).toBeLessThanOrEqual(1)
  expect(await outboxStatusCounts(app, s.accountId)).toEqual({ queued })
}

describe('a server out of reach: one probe speaks for the connection', () => {
  it('messages queued behind it wait for the probe without spending tries of their own, then all go', async () => {
    const s = await startSender(app, 'outage', { plan: 'pro' })
    await s.sink.close()
    const lanes = 4
    // Production's first retry (a minute later); probes every 200 ms once the first one has run.
    await app.worker({ lanes, retry: retryPolicy(60_000, 8, 60_000), probeIntervalMs: 200 })
    const ids = await Promise.all(Array.from({ length: 12 }, () => enqueued(app, s.key, email())))
    await waitFor('the outage found', async () =>
      (await costs(s)).some((c) => c.attempts > 0) ? true : undefined,
    )
    await noneInFlight(s)
    await expectWithinBudget(s, ids.length, lanes)
    // The minute passes: the probes, not the messages, find the server still down, until the
    // connection pauses.
    await app.services.sql`
      update connections set failure_window_until = mailroom_now() where id = ${s.connectionId}`
    await probeNow(s)
    await waitFor('the connection paused by its probes', async () =>
      (await state(s)).paused ? true : undefined,
    )
    expect(await state(s)).toMatchObject({ paused: true, paused_by: 'unreachable' })
    await expectWithinBudget(s, ids.length, lanes)

    const back = await restart(s.sink)
    await waitFor('the connection resumed', async () => ((await state(s)).paused ? undefined : true))
    await back.waitForMessages(ids.length)
    for (const id of ids) await waitForOutboxStatus(app, s.accountId, id, 'sent')
    expect((await costs(s)).every((c) => c.failures <= 1)).toBe(true)
  })

  it('mail waiting behind it still ends at the queue lifetime, failed with the reason', async () => {
    const s = await startSender(app, 'lifetime', { plan: 'pro' })
    await s.sink.close()
    await app.worker({ lanes: 1, retry: retryPolicy(60_000, 8, 60_000, 3_600_000), probeIntervalMs: 60_000 })
    const ids = await Promise.all(Array.from({ length: 3 }, () => enqueued(app, s.key, email())))
    await waitFor('the outage found', async () =>
      (await costs(s)).some((c) => c.attempts > 0) ? true : undefined,
    )
    await noneInFlight(s)
    // Two hours pass for the mail, never tried since: the next probe ends it.
    await app.services.sql`
      update outbox set created_at = created_at - interval '2 hours' where id = any(${ids}::int[])`
    await probeNow(s)
    for (const id of ids) {
      const failed = await waitForOutboxStatus(app, s.accountId, id, 'failed')
      expect(failed.error).toMatch(/^Still deferred after 2 hours: .*ECONNREFUSED/)
    }
    expect((await costs(s)).reduce((n, c) => n + c.failures, 0)).toBeLessThanOrEqual(1)
  })
})

describe('the end of a pause lets all the waiting mail go at once', () => {
  it('when a probe finds the server answering, mail waiting out its own back-off goes too', async () => {
    const s = await startSender(app, 'probe-ends', { plan: 'pro' })
    await s.sink.close()
    await pauseUnreachable(s)
    const ids = await waitingOutBackOffs(s, 6)
    await app.worker({ probeIntervalMs: 200 })
    const back = await restart(s.sink)
    await probeNow(s)
    // Each was due 3 to 8 minutes from now: delivered now, they did not wait for it.
    await back.waitForMessages(ids.length)
    for (const id of ids) await waitForOutboxStatus(app, s.accountId, id, 'sent')
  })

  it('when an operator resumes a paused connection, mail waiting out its own back-off goes too', async () => {
    const s = await startSender(app, 'hand-ends', { plan: 'pro' })
    await pauseConnection(app.services.sql, s.connectionId)
    const ids = await waitingOutBackOffs(s, 6)
    await app.worker()
    await resumeConnection(app.services.sql, s.connectionId)
    await s.sink.waitForMessages(ids.length)
    for (const id of ids) await waitForOutboxStatus(app, s.accountId, id, 'sent')
  })

  it('resuming by hand while the queue waits for its server lets the waiting mail go as well', async () => {
    const s = await startSender(app, 'hand-outage', { plan: 'pro' })
    await s.sink.close()
    await app.worker({ retry: retryPolicy(60_000, 8, 60_000) })
    const first = await enqueued(app, s.key, email())
    await waitForOutboxStatus(app, s.accountId, first, 'queued')
    await waitFor('a try', async () => ((await costs(s))[0]?.attempts ? true : undefined))
    const back = await restart(s.sink)
    await resumeConnection(app.services.sql, s.connectionId)
    await back.waitForMessages(1)
    await waitForOutboxStatus(app, s.accountId, first, 'sent')
  })
})

describe('a connection paused because its server was out of reach', () => {
  it('is probed, resumed as soon as the server answers, and its waiting mail goes', async () => {
    const s = await startSender(app, 'probed', { plan: 'pro' })
    await s.sink.close()
    await pauseUnreachable(s)
    const id = await enqueued(app, s.key, email())
    await app.worker({ probeIntervalMs: 200 })
    const back = await restart(s.sink)
    await probeNow(s)
    await waitFor('the connection resumed', async () => ((await state(s)).paused ? undefined : true))
    expect(await state(s)).toMatchObject({ paused: false, paused_by: null, consecutive_failures: 0 })
    await waitForOutboxStatus(app, s.accountId, id, 'sent')
    expect(back.messages).toHaveLength(1)
  })

  it('stays paused while the server is still down, and is probed again', async () => {
    const s = await startSender(app, 'still-down', { plan: 'pro' })
    await s.sink.close()
    await pauseUnreachable(s)
    await app.worker({ probeIntervalMs: 60_000 })
    await probeNow(s)
    // The probe ran and failed: a new one is due a probe interval later.
    await waitFor('the next probe', async () => {
      const [job] = await app.services.sql<{ later: boolean }[]>`
        select run_at > now() + interval '30 seconds' as later from graphile_worker.jobs
        where key = ${`probe:${s.connectionId}`}`
      return job?.later ? true : undefined
    })
    expect(await state(s)).toMatchObject({ paused: true, paused_by: 'unreachable' })
  })

  it('a pause for push-back is not probed: the provider asked to slow down, and the timed pause stands', async () => {
    const s = await startSender(app, 'pushed', { plan: 'pro' })
    s.sink.setBehaviour({ rejectData: { code: 451, message: '4.7.1 Slow down' } })
    for (let i = 0; i < 5; i++) {
      expect((await postSend(app, s.key, email())).status).toBe(429)
      await app.services.sql`
        update connections set failure_window_until = failure_window_until - interval '61 seconds'
        where id = ${s.connectionId}`
    }
    expect(await state(s)).toMatchObject({
      paused: true,
      paused_by: 'pushback',
      pause_reason: '451 4.7.1 Slow down',
    })
    const probes = await app.services
      .sql`select 1 from graphile_worker.jobs where key = ${`probe:${s.connectionId}`}`
    expect(probes).toHaveLength(0)
  })
})
