/**
 * What the scale-out scenario must show: the clients' answers, the outbox and the sinks' arrivals
 * agreeing, quotas and the daily limit per fixed UTC window, and the pacing bucket's bound.
 */
import { expect } from 'vitest'
import type { ReceivedMessage } from '../../support/smtp-sink.ts'
import { type Cluster, DAY, FREE_DAILY_LIMIT, HOUR, type Paced } from './cluster.ts'
import { type Answer, BATCH_RECIPIENTS } from './load.ts'

export interface OutboxRow {
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

/** Every answer is an acceptance or a 429 of the limits; returns the codes of each kind of request. */
export function expectAnswers(answers: Answer[]): (what: string) => Set<string | number> {
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
  return codes
}

/** The scenario's outbox records, and how many times each Message-ID arrived at the sinks. */
export interface Outbox {
  rows: OutboxRow[]
  byOutboxId: Map<number, OutboxRow>
  byMessageId: Map<string, OutboxRow>
  sinks: Paced[]
  arrived: Map<string, number>
}

export async function outboxOf(cluster: Cluster): Promise<Outbox> {
  const { app, pro, free, p1, p2, f } = cluster
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
  return { rows, byOutboxId, byMessageId, sinks, arrived }
}

/** No Message-ID twice, and nothing arrived that the outbox does not account for. */
export function expectArrivalsAccounted({ sinks, byMessageId, arrived }: Outbox): void {
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
}

/** Every accepted email arrived exactly once, or waits queued; returns the accepted records. */
export function expectAcceptedArrived(cluster: Cluster, answers: Answer[], outbox: Outbox): OutboxRow[] {
  const { f } = cluster
  const { rows, byOutboxId, arrived } = outbox
  const accepted: OutboxRow[] = []
  for (const a of answers.filter((x) => x.status === 200 && x.what !== 'batch' && x.what !== 'form')) {
    const row = byOutboxId.get(a.body.outboxId as number)
    expect(row, `outbox record ${a.body.outboxId} of an accepted ${a.what}`).toBeDefined()
    if (a.what !== 'enqueue') expect(row?.message_id).toBe(a.body.messageId)
    accepted.push(row as OutboxRow)
  }
  const batch = answers.find((a) => a.what === 'batch')?.body
  expect(batch?.total_count).toBe(BATCH_RECIPIENTS.length)
  const batchRows = rows.filter((r) => r.batch_id === batch?.batch_id)
  expect(batchRows).toHaveLength(BATCH_RECIPIENTS.length)
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
  return accepted
}

/** Quotas per fixed UTC hour, as the sinks counted, each arrival in the window its record took. */
export function expectQuotaWindows(cluster: Cluster, { byMessageId }: Outbox): void {
  const { p1, p2, offsetMs, topOfHour } = cluster
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
      expect(taken === own || (taken === own - HOUR && at - own < 60_000), `quota window of ${row.id}`).toBe(
        true,
      )
      byWindow.set(taken, (byWindow.get(taken) ?? 0) + 1)
    }
    for (const [start, n] of byWindow) {
      expect(n, `${c.from} in the hour from ${new Date(start).toISOString()}`).toBeLessThanOrEqual(c.quota)
    }
    expect(windowsOf(c, HOUR).get(topOfHour) ?? 0, `${c.from} sent in the second window`).toBeGreaterThan(0)
  }
}

/** The Free account's daily limit, per UTC day. */
export function expectDailyLimit(
  cluster: Cluster,
  { byMessageId }: Outbox,
  codes: (what: string) => Set<string | number>,
): void {
  const { f, offsetMs } = cluster
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
}

/** Rates: every send took a token, and the tokens kept to the bucket. */
export async function expectRates(cluster: Cluster, { sinks }: Outbox): Promise<void> {
  const { app } = cluster
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
      if (before < k + 1) expect.fail(`${c.from}: arrival ${k + 1} at ${at} with only ${before} tokens taken`)
    })
  }
}
