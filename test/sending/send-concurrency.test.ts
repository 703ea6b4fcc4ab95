/**
 * Contract tests for POST /send under concurrency: one Idempotency-Key sends once however many
 * requests race for it, and quota and the Free daily limit are never exceeded, also when two API
 * processes share the database (the counters are shared through PostgreSQL).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../../src/net/free-port.ts'
import { TEST_SECRET, useTestApp } from '../support/app.ts'
import {
  type Body,
  dailyLimitBody,
  dailyUsed,
  fresh,
  IN_FLIGHT,
  nextUtcMidnight,
  quotaBody,
  quotaUsed,
  type Reply,
  replayOf,
  replyOf,
  type Sender,
  type SenderOptions,
  setDailyUsed,
  startSender,
} from '../support/sending.ts'

// Concurrent requests on real connections to a listening server.
const app = useTestApp({}, { listen: true })

let seq = 0

function sender(options: Pick<SenderOptions, 'plan' | 'quota'> = {}): Promise<Sender> {
  return startSender(app, 'race', options)
}

function email() {
  return { to: 'rcpt@example.com', subject: `Race ${++seq}`, text_body: 'Hello' }
}

/** POST /send against any API process (`baseUrl` ends in /v1). */
async function sendTo(baseUrl: string, apiKey: string, idempotencyKey?: string): Promise<Reply> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${apiKey}`,
    'content-type': 'application/json',
  }
  if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey
  const res = await fetch(`${baseUrl}/send`, { method: 'POST', headers, body: JSON.stringify(email()) })
  return replyOf(res)
}

async function outboxCount(accountId: number): Promise<number> {
  const [row] = await app.services.sql<{ n: number }[]>`
    select count(*)::int as n from outbox where account_id = ${accountId}`
  return row?.n ?? 0
}

/** Every reply of a race on one key: the one send, replays of it, or IN_FLIGHT; exactly one fresh. */
function expectOneSendPerKey(replies: Reply[], s: Sender): Body {
  const fresh200 = replies.filter((r) => r.status === 200 && r.body.replayed === undefined)
  expect(fresh200, JSON.stringify(replies.map((r) => r.body))).toHaveLength(1)
  const original = fresh200[0]?.body as Body
  expect(original).toEqual(fresh(s.from))
  for (const reply of replies) {
    if (reply.status === 400) {
      expect(reply.body).toEqual(IN_FLIGHT)
      continue
    }
    expect(reply.status, JSON.stringify(reply.body)).toBe(200)
    if (reply.body === original) continue
    expect(reply.body).toEqual(replayOf(original))
  }
  return original
}

/** Of a race against a limit: `allowed` sends go through, every other reply is the limit's 429. */
function expectSplit(replies: Reply[], s: Sender, allowed: number, refusal: Body): void {
  const ok = replies.filter((r) => r.status === 200)
  const refused = replies.filter((r) => r.status !== 200)
  expect(ok, JSON.stringify(refused.map((r) => r.body))).toHaveLength(allowed)
  for (const reply of ok) expect(reply.body).toEqual(fresh(s.from))
  expect(new Set(ok.map((r) => r.body.outboxId)).size).toBe(allowed)
  expect(refused).toHaveLength(replies.length - allowed)
  for (const reply of refused) {
    expect(reply.status).toBe(429)
    expect(reply.body).toEqual(refusal)
    expect(reply.retryAfter).toMatch(/^[1-9]\d*$/)
  }
}

// ------------------------------------------------------------------------------------------------

describe('one Idempotency-Key, many concurrent requests', () => {
  it('30 concurrent requests with one key deliver exactly one message', async () => {
    const s = await sender({ quota: { quota: 5, per: 'day' } })
    const key = `race-${Date.now()}`
    const replies = await Promise.all(Array.from({ length: 30 }, () => sendTo(app.baseUrl, s.key, key)))
    const original = expectOneSendPerKey(replies, s)

    await sleep(300)
    expect(s.sink.messages).toHaveLength(1)
    expect(s.sink.messages[0]?.headers.get('message-id')).toBe(original.messageId)
    // Requests that lost the race gave back whatever they had reserved.
    expect(await outboxCount(s.accountId)).toBe(1)
    expect(await quotaUsed(app, s.connectionId)).toBe(1)
    expect(await dailyUsed(app, s.accountId)).toBe(1)

    const later = await sendTo(app.baseUrl, s.key, key)
    expect(later.status).toBe(200)
    expect(later.body).toEqual(replayOf(original))
  })

  it('30 concurrent requests with one key and one unit of quota left: one message, no 429 for the key', async () => {
    // Rule 3 and the order of checks (idempotency before the limits): while the first request
    // with the key is in progress, every other request with it gets IN_FLIGHT or its replay, not
    // the 429 of the unit the first request itself took.
    const s = await sender({ quota: { quota: 1, per: 'day' } })
    const key = `race-last-unit-${Date.now()}`
    const replies = await Promise.all(Array.from({ length: 30 }, () => sendTo(app.baseUrl, s.key, key)))
    expectOneSendPerKey(replies, s)

    await sleep(300)
    expect(s.sink.messages).toHaveLength(1)
    expect(await quotaUsed(app, s.connectionId)).toBe(1)
  })
})

describe('connection quota under concurrency', () => {
  it('50 concurrent sends against a quota of 10 deliver exactly 10', async () => {
    const s = await sender({ plan: 'pro', quota: { quota: 10, per: 'day' } })
    const before = Date.now()
    const replies = await Promise.all(Array.from({ length: 50 }, () => sendTo(app.baseUrl, s.key)))
    expectSplit(replies, s, 10, quotaBody(10, 10, nextUtcMidnight(before)))

    await sleep(300)
    expect(s.sink.messages).toHaveLength(10)
    expect(await quotaUsed(app, s.connectionId)).toBe(10)
  })
})

describe('Free daily limit under concurrency', () => {
  it('with 95 used, 20 concurrent sends deliver exactly 5', async () => {
    const s = await sender()
    await setDailyUsed(app, s.accountId, 95)
    const replies = await Promise.all(Array.from({ length: 20 }, () => sendTo(app.baseUrl, s.key)))
    expectSplit(replies, s, 5, dailyLimitBody())

    await sleep(300)
    expect(s.sink.messages).toHaveLength(5)
    expect(await dailyUsed(app, s.accountId)).toBe(100)
  })
})

describe('two API processes on one database', () => {
  let child: ChildProcess | undefined
  let childBaseUrl = ''
  const childOutput: string[] = []

  beforeAll(async () => {
    const port = await freePort()
    const root = fileURLToPath(new URL('../..', import.meta.url))
    child = spawn(process.execPath, ['bin/mailroom.js', 'start', '--no-worker'], {
      cwd: root,
      env: {
        ...process.env,
        DATABASE_URL: app.db.url,
        MAILROOM_SECRET: TEST_SECRET,
        MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS: '1',
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    child.stdout?.on('data', (chunk: Buffer) => childOutput.push(chunk.toString()))
    child.stderr?.on('data', (chunk: Buffer) => childOutput.push(chunk.toString()))
    const url = `http://127.0.0.1:${port}`
    const deadline = Date.now() + 30_000
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(
          `second API process exited (${child.exitCode ?? child.signalCode}): ${childOutput.join('')}`,
        )
      }
      const healthy = await fetch(`${url}/health`).then(
        (res) => res.ok,
        () => false,
      )
      if (healthy) break
      if (Date.now() > deadline) throw new Error(`second API process not healthy: ${childOutput.join('')}`)
      await sleep(100)
    }
    childBaseUrl = `${url}/v1`
  })

  afterAll(async () => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return
    const exited = once(child, 'exit')
    child.kill('SIGTERM')
    const timeout = sleep(15_000).then(() => 'timeout' as const)
    if ((await Promise.race([exited, timeout])) === 'timeout') {
      child.kill('SIGKILL')
      await exited
    }
  })

  it('25 sends to each process against a quota of 10 deliver exactly 10 in total', async () => {
    const s = await sender({ plan: 'pro', quota: { quota: 10, per: 'day' } })
    const before = Date.now()
    const replies = await Promise.all(
      Array.from({ length: 50 }, (_, i) => sendTo(i % 2 ? childBaseUrl : app.baseUrl, s.key)),
    )
    expectSplit(replies, s, 10, quotaBody(10, 10, nextUtcMidnight(before)))

    await sleep(300)
    expect(s.sink.messages).toHaveLength(10)
    expect(await quotaUsed(app, s.connectionId)).toBe(10)
  })

  it('one Idempotency-Key sent to both processes concurrently delivers exactly one message', async () => {
    const s = await sender()
    const key = `two-processes-${Date.now()}`
    const replies = await Promise.all(
      Array.from({ length: 30 }, (_, i) => sendTo(i % 2 ? childBaseUrl : app.baseUrl, s.key, key)),
    )
    expectOneSendPerKey(replies, s)

    await sleep(300)
    expect(s.sink.messages).toHaveLength(1)
    expect(await outboxCount(s.accountId)).toBe(1)
    expect(await dailyUsed(app, s.accountId)).toBe(1)
  })
})
