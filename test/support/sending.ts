/**
 * What the POST /send contract tests share: the reply of a send as status, body and Retry-After,
 * fresh accounts with a sink of their own, the bodies the API answers with, and the usage
 * counters the service keeps in PostgreSQL.
 */
import { createHash } from 'node:crypto'
import { expect } from 'vitest'
import { connectionNamed } from '../../src/db/connections.ts'
import type { Recheck } from '../../src/db/fast-path.ts'
import { seedAccount, type TestApp } from './app.ts'
import type { SinkBehaviour, SmtpSink } from './smtp-sink.ts'

/** A response body of POST /send: a success (fresh or replayed) or an error. */
export interface Body {
  [field: string]: unknown
  success?: boolean
  outboxId?: number
  messageId?: string
  from?: string
  replayed?: boolean
  code?: string
  details?: {
    retryAfter?: number
    resetsAt?: string
    limit?: number
    used?: number
    upgradeRequired?: boolean
  }
}

export interface Reply {
  status: number
  body: Body
  retryAfter: string | null
}

/** An account with one connection to a sink of its own, and its API key. */
export interface Sender {
  sink: SmtpSink
  key: string
  accountId: number
  connectionId: number
  from: string
}

export interface SenderOptions {
  plan?: 'free' | 'pro'
  quota?: { quota: number; per: 'day' | 'hour' }
  rate?: number
  behaviour?: Partial<SinkBehaviour>
}

/** A sink on port 2525, closed with the fixture. */
export function startSink(app: TestApp, behaviour?: Partial<SinkBehaviour>): Promise<SmtpSink> {
  return app.sink({ port: 2525, ...(behaviour ? { behaviour } : {}) })
}

let addressSeq = 0

/** A sending address no other one made here uses, e.g. `race7@example.com` for `race`. */
export function senderAddress(label: string): string {
  return `${label}${++addressSeq}@example.com`
}

/** A fresh account with one connection to a sink of its own; a high rate unless pacing is tested. */
export async function startSender(app: TestApp, label: string, options: SenderOptions = {}): Promise<Sender> {
  const sink = await startSink(app, options.behaviour)
  const from = senderAddress(label)
  const seeded = await seedAccount(app, {
    plan: options.plan ?? 'free',
    connection: { ...sink.login, from, rate: options.rate ?? 6000, quota: options.quota },
  })
  if (!seeded.connection) throw new Error('seedAccount made no connection')
  return { sink, key: seeded.key, accountId: seeded.account.id, connectionId: seeded.connection.id, from }
}

export async function replyOf(res: Response): Promise<Reply> {
  return { status: res.status, body: (await res.json()) as Body, retryAfter: res.headers.get('retry-after') }
}

/** POST /send with the API key `apiKey`, and the Idempotency-Key header when one is given. */
export async function postSend(
  app: TestApp,
  apiKey: string,
  body: unknown,
  idempotencyKey?: string,
): Promise<Reply> {
  const res = await app.request('/send', {
    key: apiKey,
    body,
    headers: idempotencyKey === undefined ? {} : { 'Idempotency-Key': idempotencyKey },
  })
  return replyOf(res)
}

/** A first, fresh send: no `replayed` field. */
export function fresh(from: string): Body {
  return {
    success: true,
    messageId: expect.any(String),
    outboxId: expect.any(Number),
    from,
    message: expect.any(String),
  }
}

/** The replay of the successful send `first`. */
export function replayOf(first: Body): Body {
  return {
    success: true,
    messageId: first.messageId,
    outboxId: first.outboxId,
    from: first.from,
    message: expect.any(String),
    replayed: true,
  }
}

export const IN_FLIGHT: Body = { code: 'IDEMPOTENCY_KEY_IN_FLIGHT', message: expect.any(String) }

export function dailyLimitBody(): Body {
  return {
    code: 'DAILY_LIMIT_REACHED',
    message: expect.any(String),
    details: { limit: 100, used: 100, upgradeRequired: true },
  }
}

export function quotaBody(limit: number, used: number, resetsAt: Date): Body {
  return {
    code: 'QUOTA_EXCEEDED',
    message: expect.any(String),
    details: { limit, used, resetsAt: resetsAt.toISOString() },
  }
}

/**
 * details.retryAfter is whole seconds, at least 1 (and at most `max` when given), and the
 * Retry-After header says the same.
 */
export function expectRetryAfter(reply: Pick<Reply, 'body' | 'retryAfter'>, max?: number): number {
  const retryAfter = reply.body.details?.retryAfter as number
  expect(Number.isInteger(retryAfter)).toBe(true)
  expect(retryAfter).toBeGreaterThanOrEqual(1)
  if (max !== undefined) expect(retryAfter).toBeLessThanOrEqual(max)
  expect(reply.retryAfter).toBe(String(retryAfter))
  return retryAfter
}

export function nextUtcMidnight(at: number): Date {
  const now = new Date(at)
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1))
}

// --- Usage counters, set and read back with SQL --------------------------------------------------

export async function setDailyUsed(app: TestApp, accountId: number, used: number): Promise<void> {
  await app.services.sql`
    insert into daily_usage (account_id, day, used)
    values (${accountId}, (now() at time zone 'UTC')::date, ${used})
    on conflict (account_id, day) do update set used = excluded.used`
}

export async function dailyUsed(app: TestApp, accountId: number): Promise<number> {
  const [row] = await app.services.sql<{ used: number }[]>`
    select coalesce(sum(used), 0)::int as used from daily_usage
    where account_id = ${accountId} and day = (now() at time zone 'UTC')::date`
  return row?.used ?? 0
}

/** What the connection used of its quota in the current fixed UTC window. */
export async function quotaUsed(
  app: TestApp,
  connectionId: number,
  per: 'day' | 'hour' = 'day',
): Promise<number> {
  const [row] = await app.services.sql<{ used: number }[]>`
    select coalesce(sum(used), 0)::int as used from quota_usage
    where connection_id = ${connectionId} and window_start = date_trunc(${per}, now(), 'UTC')`
  return row?.used ?? 0
}

/** The id of the account's (one) API key. */
export async function keyIdOf(app: TestApp, accountId: number): Promise<number> {
  const [row] = await app.services.sql<
    { id: number }[]
  >`select id from api_keys where account_id = ${accountId}`
  return row?.id as number
}

/** The account's outbox records, of `status` if given. */
export async function outboxCount(app: TestApp, accountId: number, status?: string): Promise<number> {
  const [row] = await app.services.sql<{ n: number }[]>`
    select count(*)::int as n from outbox
    where account_id = ${accountId} and (${status ?? null}::text is null or status = ${status ?? null})`
  return row?.n ?? 0
}

/**
 * A message from `s` carrying the recheck a request on its cached key and connection would carry
 * (the connection as it reads now), for a statement that rechecks; `over` makes it wrong.
 */
export async function recheckedMessage(
  app: TestApp,
  s: Sender,
  subject: string,
  over: { plan?: 'free' | 'pro'; keyId?: number } = {},
) {
  const connection = await connectionNamed(app.services.sql, { id: s.connectionId })
  if (!connection) throw new Error('no connection')
  const recheck: Recheck = {
    keyId: over.keyId ?? (await keyIdOf(app, s.accountId)),
    digest: createHash('sha256').update(s.key).digest(),
    plan: over.plan ?? 'pro',
    scope: null,
    connection,
  }
  return {
    accountId: s.accountId,
    connectionId: s.connectionId,
    from: s.from,
    to: ['someone@example.com'],
    cc: [],
    bcc: [],
    subject,
    messageId: `<${subject}-${process.pid}@example.com>`,
    text_body: 'Hello',
    recheck,
  }
}
