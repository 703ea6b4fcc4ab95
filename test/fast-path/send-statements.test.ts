/**
 * Concurrent POST /sends and /enqueues share their statements, in rounds
 * (src/fast-path/send-statements.ts, src/fast-path/rounds.ts): what a round's requests find is looked up in one statement, their attempts
 * claimed in another, in the order they came and each seeing what the ones before it took, and
 * their mail queued in one. Nothing of what one request would have done alone may change.
 */
import { createHash } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { addConnection } from '../../src/connections/connections.ts'
import { type AttemptToRecord, recordSendAttempts, sendFindings } from '../../src/db/send-attempts.ts'
import type { Limits } from '../../src/db/usage.ts'
import { KeyedRounds } from '../../src/fast-path/rounds.ts'
import { useTestApp } from '../support/app.ts'
import { email } from '../support/queue.ts'
import {
  type Body,
  dailyUsed,
  type Sender,
  senderAddress,
  setDailyUsed,
  startSender,
  startSink,
} from '../support/sending.ts'

const app = useTestApp()

const sha256 = (key: string) => createHash('sha256').update(key).digest()

let seq = 0

/** An attempt through `connectionId` of `s`'s account, under `key` when one is given. */
function attempt(s: Sender, key: string | null, connectionId = s.connectionId): AttemptToRecord['attempt'] {
  const n = ++seq
  return {
    accountId: s.accountId,
    connectionId,
    from: s.from,
    to: [`r${n}@example.com`],
    cc: [],
    bcc: [],
    subject: `Round ${n}`,
    messageId: `<round-${n}-${process.pid}@example.com>`,
    text_body: 'Hello',
    idempotencyKey: key === null ? null : sha256(key),
  }
}

function limits(s: Sender, over: Partial<Limits> = {}, connectionId = s.connectionId): Limits {
  return {
    accountId: s.accountId,
    dailyLimit: null,
    connectionId,
    quota: null,
    // Two tokens, and the next one not due for a long while.
    bucket: { capacity: 2, perSecond: 0.001 },
    ...over,
  }
}

/** Another connection of `s`'s account, to a sink of its own. */
async function secondConnection(s: Sender, label: string) {
  const sink = await startSink(app)
  return addConnection(app.services, {
    accountId: s.accountId,
    ...sink.login,
    from: senderAddress(label),
    rate: 6000,
  })
}

async function recorded(connectionId: number) {
  return app.services.sql<{ subject: string; status: string }[]>`
    select subject, status from outbox where connection_id = ${connectionId} order by id`
}

describe('a round of attempts: one statement, in the order the requests came', () => {
  it('each attempt sees the keys and units of the ones before it, as if they had come one by one', async () => {
    const s = await startSender(app, 'round-order', { plan: 'pro' })
    const [first, duplicate, second, third] = [
      attempt(s, 'order-k'),
      attempt(s, 'order-k'),
      attempt(s, null),
      attempt(s, null),
    ]
    const results = await recordSendAttempts(app.services.sql, limits(s), [first, duplicate, second, third])
    expect(results.map((r) => r.refused)).toEqual([null, 'key', null, 'pacing'])
    // The third waits for a token: at a token every 1000 s, far off.
    expect(results[3]).toMatchObject({ refused: 'pacing', waitMs: expect.any(Number) })
    expect((results[3] as { waitMs: number }).waitMs).toBeGreaterThan(100_000)
    expect(await recorded(s.connectionId)).toEqual([
      { subject: first.subject, status: 'sending' },
      { subject: second.subject, status: 'sending' },
    ])
  })

  it("a limit refusing one attempt leaves the round's others as they were: the daily limit's last unit goes to the first", async () => {
    const s = await startSender(app, 'round-daily', { plan: 'free' })
    await setDailyUsed(app, s.accountId, 99)
    const round = [attempt(s, 'daily-a'), attempt(s, 'daily-b')]
    const daily = limits(s, { dailyLimit: 100, bucket: { capacity: 10, perSecond: 10 } })
    const results = await recordSendAttempts(app.services.sql, daily, round)
    expect(results.map((r) => r.refused)).toEqual([null, 'daily'])
    expect(results[1]).toMatchObject({ used: 100 })
    expect(await dailyUsed(app, s.accountId)).toBe(100)
    // The refused one's key is free: a retry may use it.
    const retry = await recordSendAttempts(app.services.sql, limits(s, { dailyLimit: 101 }), [
      attempt(s, 'daily-b'),
    ])
    expect(retry.map((r) => r.refused)).toEqual([null])
  })

  it('two rounds reusing each other’s keys through two connections deadlock, and the one aborted is recorded attempt by attempt', async () => {
    const s = await startSender(app, 'round-deadlock', { plan: 'pro' })
    const other = await secondConnection(s, 'round-deadlock-2')
    await setDailyUsed(app, s.accountId, 0)
    const daily = { dailyLimit: 100, bucket: { capacity: 10, perSecond: 10 } }
    const round = (connectionId: number, keys: string[]) =>
      recordSendAttempts(
        app.services.sql,
        limits(s, daily, connectionId),
        keys.map((key) => attempt(s, key, connectionId)),
      )
    // Both connections' rows are held while each round records its first attempt (its own key):
    // recording one checks its connection. Let go, each round wants the key the other holds.
    let rounds: Promise<unknown[]>[] = []
    await app.services.sql.begin(async (tx) => {
      await tx`select 1 from connections where id in (${s.connectionId}, ${other.id}) for update`
      rounds = [round(s.connectionId, ['cross-1', 'cross-2']), round(other.id, ['cross-2', 'cross-1'])]
      await sleep(300)
    })
    const [a, b] = (await Promise.all(rounds)) as { refused: string | null }[][]
    const outcomes = [a, b].map((round) => round?.map((r) => r.refused))
    // One round took both keys; the other, recorded again attempt by attempt, found them taken.
    expect(outcomes).toContainEqual([null, null])
    expect(outcomes).toContainEqual(['key', 'key'])
    expect(await dailyUsed(app, s.accountId)).toBe(2)
    const [records] = await app.services.sql<{ count: number }[]>`
      select count(*)::int as count from outbox where account_id = ${s.accountId}`
    expect(records?.count).toBe(2)
  })
})

describe('what a round of requests finds', () => {
  it("each request's earlier attempt and connection, in order, however it names the connection", async () => {
    const s = await startSender(app, 'round-find', { plan: 'pro' })
    const second = await secondConnection(s, 'round-find-2')
    const [earlier] = await recordSendAttempts(app.services.sql, limits(s), [attempt(s, 'find-k')])
    const found = await sendFindings(app.services.sql, [
      { accountId: s.accountId, key: sha256('find-k'), ref: { accountId: s.accountId } },
      {
        accountId: s.accountId,
        key: null,
        ref: { accountId: s.accountId, address: second.from.toUpperCase() },
      },
      { accountId: s.accountId, key: sha256('find-other'), ref: { id: second.id } },
      { accountId: s.accountId, key: null, ref: { accountId: s.accountId, address: 'nobody@example.com' } },
      {
        accountId: s.accountId + 1_000_000,
        key: sha256('find-k'),
        ref: { accountId: s.accountId + 1_000_000 },
      },
    ])
    expect(found.map((f) => [f.earlier?.id, f.earlier?.in_flight, f.connection?.id])).toEqual([
      [(earlier as { id: number }).id, true, s.connectionId],
      [undefined, undefined, second.id],
      [undefined, undefined, second.id],
      [undefined, undefined, undefined],
      [undefined, undefined, undefined],
    ])
  })
})

describe('concurrent requests through the API, in rounds', () => {
  it('16 concurrent /enqueues each keep their own request id, whichever request started the round', async () => {
    const s = await startSender(app, 'round-enqueue', { plan: 'pro' })
    const replies = await Promise.all(
      Array.from({ length: 16 }, async (_, i) => {
        const res = await app.request('/enqueue', {
          method: 'POST',
          key: s.key,
          body: email(),
          headers: { 'X-Request-Id': `round-enqueue-${i}` },
        })
        return { i, status: res.status, body: (await res.json()) as Body }
      }),
    )
    expect(replies.map((r) => r.status)).toEqual(Array(16).fill(200))
    const rows = await app.services.sql<{ id: number; request_id: string }[]>`
      select id, request_id from outbox where connection_id = ${s.connectionId}`
    const requestOf = new Map(rows.map((r) => [r.id, r.request_id]))
    for (const { i, body } of replies)
      expect(requestOf.get(body.outboxId as number)).toBe(`round-enqueue-${i}`)
  })

  it('16 concurrent /sends through one connection each get their own record and message', async () => {
    const s = await startSender(app, 'round-send', { plan: 'pro' })
    const replies = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        app.request('/send', {
          key: s.key,
          body: { to: `r${i}@example.com`, subject: `Send ${i}`, text_body: 'Hi' },
        }),
      ),
    )
    const bodies = (await Promise.all(replies.map((r) => r.json()))) as Body[]
    expect(replies.map((r) => r.status)).toEqual(Array(16).fill(200))
    expect(new Set(bodies.map((b) => b.outboxId)).size).toBe(16)
    const rows = await app.services.sql<{ id: number; subject: string; status: string }[]>`
      select id, subject, status from outbox where connection_id = ${s.connectionId}`
    expect(rows.every((r) => r.status === 'sent')).toBe(true)
    for (const [i, body] of bodies.entries())
      expect(rows.find((r) => r.id === body.outboxId)?.subject).toBe(`Send ${i}`)
    expect(s.sink.messages.map((m) => m.headers.get('subject')).sort()).toEqual(
      Array.from({ length: 16 }, (_, i) => `Send ${i}`).sort(),
    )
  })
})

describe('keyed rounds', () => {
  it("one key's round never waits for another's; a key's work waiting together is one round", async () => {
    const asked: [string, number[]][] = []
    let release = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    const rounds = new KeyedRounds<string, number, number>(async (key, items) => {
      asked.push([key, items])
      if (key === 'slow') await held
      return items.map((x) => x * 10)
    })
    const slow = rounds.do('slow', 1)
    const fast = await Promise.all([rounds.do('fast', 2), rounds.do('fast', 3)])
    expect(fast).toEqual([20, 30])
    const later = [rounds.do('slow', 4), rounds.do('slow', 5)]
    release()
    expect(await slow).toBe(10)
    expect(await Promise.all(later)).toEqual([40, 50])
    expect(asked).toEqual([
      ['slow', [1]],
      ['fast', [2, 3]],
      ['slow', [4, 5]],
    ])
    // An idle key starts afresh.
    expect(await rounds.do('fast', 6)).toBe(60)
  })
})
