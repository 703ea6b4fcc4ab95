/**
 * Mailroom scaled out. Two API processes (`mailroom start --no-worker`) and two
 * worker processes (`mailroom start --worker-only`) share one PostgreSQL, and /send, /enqueue, a
 * batch and hosted-form submissions go through both APIs at once, against connections with small
 * quotas and rates and a Free account at its daily limit. docs/decisions.md ("Quota, daily limit and
 * pacing"; "Delivery guarantees") says that the processes together never exceed a quota, a daily
 * limit or a rate, and that nothing accepted is lost or sent twice. The SMTP sinks are the judges:
 * their arrivals are counted per fixed UTC window, every accepted email arrived exactly once or is
 * still queued for the next window, and no Message-ID arrived twice.
 *
 * The database's clock (mailroom_now(), set for every session of the test database) reaches the
 * top of an hour during the run, so that mail left waiting when the first window's quota is used
 * up goes out in the second window, within the test.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, describe, expect, it } from 'vitest'
import { addConnection } from '../../src/connections/connections.ts'
import { createForm } from '../../src/forms/forms.ts'
import { freePort } from '../../src/net/free-port.ts'
import { seedAccount, type TestApp, useTestApp } from '../support/app.ts'
import { type MailroomProcess, mailroomEnv, spawnMailroom, waitFor, waitHealthy } from '../support/queue.ts'
import type { Body } from '../support/sending.ts'
import type { ReceivedMessage, SmtpSink } from '../support/smtp-sink.ts'

const HOUR = 3_600_000
const DAY = 24 * HOUR
/** From the moment the clock is set until the database's clock reaches the top of the hour. */
const LEAD_MS = 40_000
const FREE_DAILY_LIMIT = 100

const app = useTestApp()
const processes: MailroomProcess[] = []

afterAll(async () => {
  await Promise.all(processes.splice(0).map((p) => p.stop()))
})

interface Paced {
  sink: SmtpSink
  connectionId: number
  from: string
  quota: number
  rate: number
}

/** A connection of `accountId` to a sink of its own, with an hourly quota and a rate. */
async function pacedConnection(
  accountId: number,
  from: string,
  settings: { quota?: number; rate: number },
): Promise<Paced> {
  const sink = await app.sink({ port: 2525 })
  const connection = await addConnection(app.services, {
    accountId,
    ...sink.login,
    from,
    rate: settings.rate,
    ...(settings.quota ? { quota: { quota: settings.quota, per: 'hour' as const } } : {}),
  })
  return { sink, connectionId: connection.id, from, quota: settings.quota ?? 0, rate: settings.rate }
}

/**
 * Logs, by triggers in the same transactions (a take or a claim rolled back is not logged either),
 * every unit of pacing taken (a row of connection_pacing inserted or updated: one token each) and
 * every claim of queued mail by a worker process. The log is the test's, on its own database.
 */
async function observe(app: TestApp): Promise<void> {
  await app.services.sql.unsafe(`
    create table scale_out_takes (
      connection_id integer not null,
      refilled_at timestamptz not null,
      tokens float8 not null,
      before_tokens float8,
      before_refilled_at timestamptz,
      logged_at timestamptz not null default clock_timestamp()
    );
    create function scale_out_log_take() returns trigger language plpgsql as $$
    begin
      insert into scale_out_takes (connection_id, refilled_at, tokens, before_tokens, before_refilled_at)
      values (new.connection_id, new.refilled_at, new.tokens,
        case when tg_op = 'UPDATE' then old.tokens end, case when tg_op = 'UPDATE' then old.refilled_at end);
      return null;
    end $$;
    create trigger scale_out_log_take after insert or update on connection_pacing
      for each row execute function scale_out_log_take();
    create table scale_out_claims (outbox_id integer not null, claimed_by text not null);
    create function scale_out_log_claim() returns trigger language plpgsql as $$
    begin
      insert into scale_out_claims values (new.id, new.claimed_by);
      return null;
    end $$;
    create trigger scale_out_log_claim after update of claimed_by on outbox
      for each row when (new.claimed_by is not null) execute function scale_out_log_claim();`)
}

/**
 * Runs mailroom_now() ahead of real time for every new session of the test database (the spawned
 * processes' too), so that it reaches the top of an hour `LEAD_MS` from now. Returns the offset.
 */
async function clockBeforeTopOfHour(app: TestApp): Promise<{ offsetMs: number; topOfHour: number }> {
  const boundary = Date.now() + LEAD_MS
  const topOfHour = Math.ceil(boundary / HOUR) * HOUR
  const offsetMs = topOfHour - boundary
  const name = new URL(app.db.url).pathname.slice(1)
  await app.services.sql.unsafe(`alter database ${name} set mailroom.clock_offset_ms = '${offsetMs}'`)
  return { offsetMs, topOfHour }
}

async function startApi(): Promise<string> {
  const port = await freePort()
  const child = spawnMailroom(
    ['start', '--no-worker'],
    mailroomEnv(app.db.url, { PORT: String(port), HOST: '127.0.0.1', MAILROOM_TRUST_PROXY: 'true' }),
  )
  processes.push(child)
  const url = `http://127.0.0.1:${port}`
  await waitHealthy(child, url)
  return url
}

function startWorkerProcess(): void {
  processes.push(spawnMailroom(['start', '--worker-only'], mailroomEnv(app.db.url)))
}

interface Reply {
  /** The API process that answered. */
  api: string
  status: number
  body: Body
}

interface Answer extends Reply {
  what: string
}

async function post(
  url: string,
  path: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<Reply> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) })
  return { api: url, status: res.status, body: (await res.json()) as Body }
}

interface OutboxRow {
  id: number
  account_id: number
  connection_id: number
  status: string
  message_id: string
  from_address: string
  subject: string
  batch_id: number | null
  attempts: number
  /** Epoch ms of the quota window its unit was taken in (null: no quota). */
  quota_window: number | null
  usage_day: string | null
}

/** Arrivals per window of `windowMs` by the database's clock, keyed by the window's start. */
function perWindow(arrivals: number[], windowMs: number, offsetMs: number): Map<number, number> {
  const counts = new Map<number, number>()
  for (const at of arrivals) {
    const start = Math.floor((at + offsetMs) / windowMs) * windowMs
    counts.set(start, (counts.get(start) ?? 0) + 1)
  }
  return counts
}

/** The pacing bucket: one second of sending, never fewer than min(rate, 10) tokens. */
function bucketCapacity(rate: number): number {
  return Math.min(rate, Math.max(10, Math.ceil(rate / 60)))
}

/** A change of a connection's bucket, as the trigger of `observe` logged it (instants in ms). */
interface TakeLogged {
  connection_id: number
  refilled_at: number
  tokens: number
  /** Null when the change made the bucket (full, less what it took). */
  before_tokens: number | null
  before_refilled_at: number | null
  logged_at: number
}

/**
 * Each token taken, at the instant of the change that took it: a change takes as many as the
 * bucket held after refilling, less what it holds now (a claim takes several at once).
 */
function tokensTaken(changes: TakeLogged[], rate: number): { refilled_at: number; logged_at: number }[] {
  const capacity = bucketCapacity(rate)
  return changes.flatMap((t) => {
    const held =
      t.before_tokens === null || t.before_refilled_at === null
        ? capacity
        : Math.min(capacity, t.before_tokens + (rate / 60_000) * (t.refilled_at - t.before_refilled_at))
    const taken = Math.round(held - t.tokens)
    return Array.from({ length: Math.max(0, taken) }, () => ({
      refilled_at: t.refilled_at,
      logged_at: t.logged_at,
    }))
  })
}

/**
 * The token bucket's bound on `takes` (database-clock instants, ascending): between any two takes
 * no more were taken than the bucket held plus what it refilled in between.
 */
function expectWithinBucket(label: string, takes: number[], rate: number): void {
  const capacity = bucketCapacity(rate)
  const perMs = rate / 60_000
  for (let i = 0; i < takes.length; i++) {
    for (let j = i; j < takes.length; j++) {
      const taken = j - i + 1
      const allowed = capacity + perMs * ((takes[j] as number) - (takes[i] as number)) + 1e-6
      if (taken > allowed) {
        expect.fail(
          `${label}: ${taken} tokens taken within ${(takes[j] as number) - (takes[i] as number)} ms, the bucket allows ${allowed.toFixed(2)}`,
        )
      }
    }
  }
}

describe('two API processes and two worker processes on one database', () => {
  it('never exceed a quota, the daily limit or a rate; every accepted email arrives once or waits queued', {
    timeout: 150_000,
  }, async () => {
    await observe(app)
    // The Pro account: a default connection and a second one, both with small quotas and rates.
    const pro = await seedAccount(app, { plan: 'pro' })
    const p1 = await pacedConnection(pro.account.id, 'scale-one@example.com', { quota: 30, rate: 120 })
    const p2 = await pacedConnection(pro.account.id, 'scale-two@example.com', { quota: 20, rate: 60 })
    // The Free account: no quota, a rate whose bucket holds more than the daily limit.
    const free = await seedAccount(app, { plan: 'free' })
    const f = await pacedConnection(free.account.id, 'scale-free@example.com', { rate: 6_000 })
    const form = await createForm(
      app.services.sql,
      pro.account.id,
      { name: 'Scale-out contact', connectionId: p2.connectionId },
      'http://localhost',
    )

    const { offsetMs, topOfHour } = await clockBeforeTopOfHour(app)
    startWorkerProcess()
    startWorkerProcess()
    const apis = await Promise.all([startApi(), startApi()])
    // Both worker processes take jobs before any mail is due: one still starting while the other
    // drains the queues in rounds would leave it nothing to take part in.
    await waitFor(
      'both worker processes taking jobs',
      async () => {
        const [row] = await app.services.sql<{ n: number }[]>`
          select count(*)::int as n from worker_processes where cardinality(job_worker_ids) > 0`
        return (row?.n ?? 0) >= 2 ? true : undefined
      },
      60_000,
      200,
    )
    const api = (n: number) => apis[n % 2] as string
    const json = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' })

    const answers: Answer[] = []
    const record = (what: string, reply: Reply) => {
      answers.push({ what, ...reply })
      return reply
    }
    let seq = 0
    const send = (n: number, key: string, from: string, what: string) =>
      post(
        api(n),
        '/v1/send',
        { from, to: `send${++seq}@example.com`, subject: `${what} ${seq}`, text_body: 'Hi' },
        json(key),
      ).then((reply) => record(what, reply))
    const enqueue = (n: number, from: string) =>
      post(
        api(n),
        '/v1/enqueue',
        { from, to: `queued${++seq}@example.com`, subject: `enqueue ${seq}`, text_body: 'Hi' },
        json(pro.key),
      ).then((reply) => record('enqueue', reply))
    const submit = async (n: number) => {
      const res = await fetch(`${api(n)}/forms/${form.public_id}`, {
        method: 'POST',
        body: new URLSearchParams({ email: `visitor${n}@example.com`, message: `Submission ${n}` }),
        // Another visitor each time: the per-address limit is not what this test is about.
        headers: { 'x-forwarded-for': `198.51.100.${n + 1}`, accept: 'application/json' },
      })
      return record('form', { api: api(n), status: res.status, body: (await res.json()) as Body })
    }

    // Everything at once, alternating between the two APIs.
    let trickling = true
    const trickle = (async () => {
      // /send keeps coming at both paced connections until the end: it meets the pacing, then
      // the quota, in both windows, while the queue takes its share of the same units.
      for (let n = 0; trickling; n++) {
        await send(n, pro.key, n % 3 === 2 ? p2.from : p1.from, 'send')
        await sleep(150)
      }
    })()
    const batchRecipients = Array.from({ length: 40 }, (_, i) => `batch${i}@example.com`)
    const load = Promise.all([
      ...Array.from({ length: 30 }, (_, n) => enqueue(n, p1.from)),
      ...Array.from({ length: 14 }, (_, n) => enqueue(n, p2.from)),
      ...Array.from({ length: 12 }, (_, n) => submit(n)),
      post(
        api(1),
        '/v1/send/batch',
        {
          from: p1.from,
          name: 'scale-out',
          template: { subject: 'batch', text_body: 'Hi' },
          recipients: batchRecipients,
        },
        json(pro.key),
      ).then((reply) => record('batch', reply)),
      (async () => {
        // The Free account beyond its daily limit, a few requests in flight at a time.
        for (let n = 0; n < FREE_DAILY_LIMIT + 6; n += 6) {
          await Promise.all(Array.from({ length: 6 }, (_, i) => send(n + i, free.key, f.from, 'free')))
        }
      })(),
    ])
    // More runs of each connection's queue than its one keyed job: both worker processes then
    // drain the same queue at once and race for the same units. A process drains a queue in
    // rounds, so a few extra runs may all go to the one that wakes first: runs are added until
    // both processes have claimed mail.
    const claimants = async () => {
      const [row] = await app.services.sql<{ n: number }[]>`
        select count(distinct claimed_by)::int as n from scale_out_claims`
      return row?.n ?? 0
    }
    for (let added = 0; added < 80 && (await claimants()) < 2; added++) {
      await app.services.sql`
        select graphile_worker.add_job('deliver_queue', json_build_object('connectionId', c.id))
        from unnest(${[p1.connectionId, p2.connectionId]}::int[]) as c(id)`
      await sleep(250)
    }
    await load

    // Until each paced connection has used the second window's quota or has nothing left to send.
    const secondWindow = new Date(topOfHour)
    const finished = async (c: Paced) => {
      const [row] = await app.services.sql<{ used: number; pending: number }[]>`
        select
          (select coalesce(sum(used), 0)::int from quota_usage
            where connection_id = ${c.connectionId} and window_start = ${secondWindow}) as used,
          (select count(*)::int from outbox
            where connection_id = ${c.connectionId} and status in ('queued', 'sending')) as pending`
      return row !== undefined && (row.used >= c.quota || row.pending === 0)
    }
    await waitFor(
      async () =>
        `both paced connections to finish (answers so far: ${answers.length}, output: ${processes.map((p) => p.output()).join('\n')})`,
      async () => ((await finished(p1)) && (await finished(p2)) ? true : undefined),
      LEAD_MS + 60_000,
      250,
    )
    trickling = false
    await trickle
    // Nothing in flight any more: what arrived is all that will arrive.
    await waitFor(
      'no message in flight',
      async () => {
        const [row] = await app.services.sql<{ n: number }[]>`
          select count(*)::int as n from outbox where status = 'sending'`
        return row?.n === 0 ? true : undefined
      },
      30_000,
      100,
    )

    // --- What the clients were told -----------------------------------------------------------
    const unexpected = answers.filter((a) => {
      if (a.what === 'send' || a.what === 'free') {
        if (a.status === 200) return a.body.success !== true
        return !(
          a.status === 429 &&
          ['RATE_LIMITED', 'QUOTA_EXCEEDED', 'DAILY_LIMIT_REACHED'].includes(a.body.code ?? '')
        )
      }
      return a.status !== 200
    })
    expect(unexpected, 'answers other than an acceptance or a 429 of the limits').toEqual([])
    const codes = (what: string) =>
      new Set(answers.filter((a) => a.what === what).map((a) => a.body.code ?? a.status))
    // The limits were reached: the test exercised them.
    expect(codes('send')).toEqual(new Set([200, 'RATE_LIMITED', 'QUOTA_EXCEEDED']))

    const rows = await app.services.sql<OutboxRow[]>`
      select id, account_id, connection_id, status, message_id, from_address, subject, batch_id, attempts,
        (extract(epoch from quota_window) * 1000)::float8 as quota_window, usage_day::text as usage_day
      from outbox where account_id in (${pro.account.id}, ${free.account.id}) order by id`
    const byOutboxId = new Map(rows.map((r) => [r.id, r]))
    const byMessageId = new Map(rows.map((r) => [r.message_id, r]))
    const sinks = [p1, p2, f]
    const arrivals: ReceivedMessage[] = sinks.flatMap((c) => c.sink.messages)
    const arrived = new Map<string, number>()
    for (const m of arrivals) {
      const id = m.headers.get('message-id') ?? ''
      arrived.set(id, (arrived.get(id) ?? 0) + 1)
    }

    // --- No Message-ID twice, and nothing arrived that the outbox does not account for --------
    expect(
      [...arrived].filter(([, n]) => n > 1),
      'Message-IDs that arrived more than once',
    ).toEqual([])
    for (const c of sinks) {
      for (const m of c.sink.messages) {
        const row = byMessageId.get(m.headers.get('message-id') ?? '')
        expect(row, `outbox record of an arrival at ${c.from}`).toBeDefined()
        expect(row?.from_address).toBe(c.from)
      }
    }

    // --- Every accepted email arrived exactly once, or waits queued --------------------------
    const accepted: OutboxRow[] = []
    for (const a of answers.filter((x) => x.status === 200 && x.what !== 'batch' && x.what !== 'form')) {
      const row = byOutboxId.get(a.body.outboxId as number)
      expect(row, `outbox record ${a.body.outboxId} of an accepted ${a.what}`).toBeDefined()
      if (a.what !== 'enqueue') expect(row?.message_id).toBe(a.body.messageId)
      accepted.push(row as OutboxRow)
    }
    const batch = answers.find((a) => a.what === 'batch')?.body
    expect(batch?.total_count).toBe(batchRecipients.length)
    const batchRows = rows.filter((r) => r.batch_id === batch?.batch_id)
    expect(batchRows).toHaveLength(batchRecipients.length)
    const formsAccepted = answers.filter((a) => a.what === 'form' && a.status === 200).length
    const formRows = rows.filter((r) => r.subject === 'New submission: Scale-out contact')
    expect(formRows).toHaveLength(formsAccepted)
    accepted.push(...batchRows, ...formRows)
    // Every record in the outbox is one of the accepted ones: none failed, none half-sent.
    expect(new Set(accepted.map((r) => r.id)).size).toBe(rows.length)
    for (const row of accepted) {
      const times = arrived.get(row.message_id) ?? 0
      if (row.status === 'sent') expect(times, `arrivals of sent record ${row.id}`).toBe(1)
      else {
        expect({ status: row.status, attempts: row.attempts, arrived: times }, `record ${row.id}`).toEqual({
          status: 'queued',
          attempts: 0,
          arrived: 0,
        })
        // Only a connection whose quota is used up keeps mail waiting.
        expect(row.connection_id).not.toBe(f.connectionId)
      }
    }
    // Both processes of each kind took part.
    const servedBy = new Set(answers.filter((a) => a.status === 200).map((a) => a.api))
    expect(servedBy.size, 'API processes that accepted mail').toBe(2)
    expect(await claimants(), 'worker processes that sent queued mail').toBe(2)
    const waiting = accepted.filter((r) => r.status === 'queued')
    expect(waiting.length, 'mail left waiting for the next window').toBeGreaterThan(0)

    // --- Quotas and the daily limit, per fixed UTC window, as the sinks counted ---------------
    const windowsOf = (c: Paced, windowMs: number) =>
      perWindow(
        c.sink.messages.map((m) => m.receivedAt.getTime()),
        windowMs,
        offsetMs,
      )
    for (const c of [p1, p2]) {
      // A message arriving just after a window's end may have taken its unit before it: each
      // arrival is counted in the window its record says, which must be its own or the one before.
      const byWindow = new Map<number, number>()
      for (const m of c.sink.messages) {
        const row = byMessageId.get(m.headers.get('message-id') ?? '') as OutboxRow
        const at = m.receivedAt.getTime() + offsetMs
        const own = Math.floor(at / HOUR) * HOUR
        const taken = row.quota_window as number
        expect(
          taken === own || (taken === own - HOUR && at - own < 60_000),
          `quota window of ${row.id}`,
        ).toBe(true)
        byWindow.set(taken, (byWindow.get(taken) ?? 0) + 1)
      }
      for (const [start, n] of byWindow) {
        expect(n, `${c.from} in the hour from ${new Date(start).toISOString()}`).toBeLessThanOrEqual(c.quota)
      }
      expect(windowsOf(c, HOUR).get(topOfHour) ?? 0, `${c.from} sent in the second window`).toBeGreaterThan(0)
    }
    const freeDays = new Map<string, number>()
    for (const m of f.sink.messages) {
      const row = byMessageId.get(m.headers.get('message-id') ?? '') as OutboxRow
      const day = new Date(Math.floor((m.receivedAt.getTime() + offsetMs) / DAY) * DAY)
        .toISOString()
        .slice(0, 10)
      expect([day, new Date(Date.parse(day) - DAY).toISOString().slice(0, 10)]).toContain(row.usage_day)
      freeDays.set(row.usage_day as string, (freeDays.get(row.usage_day as string) ?? 0) + 1)
    }
    for (const [day, n] of freeDays) expect(n, `Free account on ${day}`).toBeLessThanOrEqual(FREE_DAILY_LIMIT)
    if (freeDays.size === 1) expect(codes('free')).toContain('DAILY_LIMIT_REACHED')

    // --- Rates: every send took a token, and the tokens kept to the bucket ---------------------
    const logged = await app.services.sql<TakeLogged[]>`
      select connection_id, (extract(epoch from refilled_at) * 1000)::float8 as refilled_at, tokens,
        before_tokens, (extract(epoch from before_refilled_at) * 1000)::float8 as before_refilled_at,
        (extract(epoch from logged_at) * 1000)::float8 as logged_at
      from scale_out_takes order by refilled_at`
    for (const c of sinks) {
      const mine = tokensTaken(
        logged.filter((t) => t.connection_id === c.connectionId),
        c.rate,
      )
      expectWithinBucket(
        c.from,
        mine.map((t) => t.refilled_at),
        c.rate,
      )
      // The k-th arrival came after at least k tokens were taken: no message outran the bucket.
      const takenAt = mine.map((t) => t.logged_at).sort((a, b) => a - b)
      const arrivedAt = c.sink.messages.map((m) => m.receivedAt.getTime()).sort((a, b) => a - b)
      arrivedAt.forEach((at, k) => {
        const before = takenAt.filter((t) => t <= at).length
        if (before < k + 1)
          expect.fail(`${c.from}: arrival ${k + 1} at ${at} with only ${before} tokens taken`)
      })
    }
  })
})
