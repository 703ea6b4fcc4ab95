/**
 * Automatic pauses read the provider fairly (issue: "a fair reading of provider failures"):
 * messages failing side by side in one outage are one failure, and a connection paused because
 * its server was out of reach is probed and resumed as soon as the server answers, rather than
 * held for the full pause.
 */
import { describe, expect, it } from 'vitest'
import { retryPolicy } from '../../src/queue/retry-policy.ts'
import { useTestApp } from '../support/app.ts'
import { email, enqueued, waitFor, waitForOutboxStatus } from '../support/queue.ts'
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

describe('one outage, one failure', () => {
  it('ten queued messages failing side by side while the server is down count once: no pause', async () => {
    const s = await startSender(app, 'outage', { plan: 'pro' })
    await s.sink.close()
    // Production's first retry: a minute later.
    await app.worker({ lanes: 4, retry: retryPolicy(60_000, 8, 60_000) })
    const ids = await Promise.all(Array.from({ length: 10 }, () => enqueued(app, s.key, email())))
    for (const id of ids) {
      await waitFor(`record ${id} tried`, async () => {
        const [row] = await app.services.sql<{ attempts: number; status: string }[]>`
          select attempts, status from outbox where id = ${id}`
        return row?.attempts === 1 && row.status === 'queued' ? true : undefined
      })
    }
    expect(await state(s)).toMatchObject({ consecutive_failures: 1, paused: false })
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
