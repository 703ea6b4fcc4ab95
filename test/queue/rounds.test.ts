/**
 * The queue claims several messages in one statement (claimQueued, in rounds of the lanes
 * waiting: src/fast-path/rounds.ts): as many as are due and every limit allows, the units of all of them
 * taken together (mailroom_take_units). What the limits leave over stays queued as if never
 * claimed, and the refusal says which limit, as one message at a time did.
 */
import { describe, expect, it } from 'vitest'
import { queueConnection } from '../../src/db/connections.ts'
import { Rounds } from '../../src/fast-path/rounds.ts'
import { BatchContents } from '../../src/queue/batch-contents.ts'
import { Claimant } from '../../src/queue/liveness.ts'
import { claimQueued, laneRounds, type QueuedClaim } from '../../src/queue/send-queued.ts'
import { useTestApp } from '../support/app.ts'
import { email, enqueued } from '../support/queue.ts'
import { dailyUsed, quotaUsed, type Sender, setDailyUsed, startSender } from '../support/sending.ts'

const app = useTestApp()

/** One claim of up to `wanted` of the sender's due messages, as a queue run makes it. */
async function claim(s: Sender, wanted: number, claimant = new Claimant()) {
  const connection = await queueConnection(app.services.sql, s.connectionId)
  if (!connection) throw new Error('no connection')
  const claimed = await claimQueued(app.services, connection, claimant, wanted, new BatchContents())
  return { claimed, claimant }
}

async function queue(s: Sender, n: number): Promise<number[]> {
  const ids: number[] = []
  for (let i = 0; i < n; i++) ids.push(await enqueued(app, s.key, email({ to: `r${i}@example.com` })))
  return ids
}

async function records(s: Sender) {
  return app.services.sql<{ id: number; status: string; attempts: number; claimed_by: string | null }[]>`
    select id, status, attempts, claimed_by from outbox where connection_id = ${s.connectionId} order by id`
}

function claimedIds(claim: QueuedClaim): number[] {
  return claim.kind === 'claimed' ? claim.claimed.map((c) => c.message.id) : []
}

describe('a claim takes several messages at once, within every limit', () => {
  it('takes every due message it asks for, oldest first, each held by the claimant and counted once', async () => {
    const s = await startSender(app, 'round', { plan: 'pro', quota: { quota: 100, per: 'day' } })
    const ids = await queue(s, 5)
    const { claimed, claimant } = await claim(s, 4)
    expect(claimedIds(claimed)).toEqual(ids.slice(0, 4))
    expect(claimant.messages.list().sort()).toEqual(ids.slice(0, 4).sort())
    expect(await quotaUsed(app, s.connectionId)).toBe(4)
    const rows = await records(s)
    expect(rows.map((r) => [r.status, r.attempts])).toEqual([...Array(4).fill(['sending', 1]), ['queued', 0]])
    expect(rows[0]?.claimed_by).toBe(claimant.id)
    // The day and window its units were taken in, for a give-back should nothing be sent.
    const [where] = await app.services.sql<{ quota_window: Date; usage_day: string | null }[]>`
      select quota_window, usage_day from outbox where id = ${ids[0] as number}`
    expect(where?.usage_day).toBeNull()
    expect(where?.quota_window?.getTime()).toBe(new Date(new Date().toISOString().slice(0, 10)).getTime())
  })

  it('asking for more than is due takes what is due, and no more units than messages', async () => {
    const s = await startSender(app, 'fewer', { plan: 'pro', quota: { quota: 100, per: 'day' } })
    const ids = await queue(s, 2)
    const { claimed } = await claim(s, 16)
    expect(claimedIds(claimed)).toEqual(ids)
    expect(await quotaUsed(app, s.connectionId)).toBe(2)
    expect(await claim(s, 16).then((c) => c.claimed)).toEqual({ kind: 'idle' })
    expect(await quotaUsed(app, s.connectionId)).toBe(2)
  })

  it('finding nothing due takes no unit of any limit: the counters are not even read', async () => {
    const s = await startSender(app, 'none-due', { plan: 'free', quota: { quota: 100, per: 'day' } })
    expect((await claim(s, 8)).claimed).toEqual({ kind: 'idle' })
    const [counters] = await app.services.sql<{ pacing: number; quota: number; daily: number }[]>`
      select (select count(*) from connection_pacing where connection_id = ${s.connectionId})::int as pacing,
             (select count(*) from quota_usage where connection_id = ${s.connectionId})::int as quota,
             (select count(*) from daily_usage where account_id = ${s.accountId})::int as daily`
    expect(counters).toEqual({ pacing: 0, quota: 0, daily: 0 })
  })

  it('a quota with fewer units than wanted: what it allows is claimed, the rest stays queued untouched', async () => {
    const s = await startSender(app, 'partial-quota', { plan: 'pro', quota: { quota: 3, per: 'day' } })
    const ids = await queue(s, 5)
    const { claimed, claimant } = await claim(s, 5)
    expect(claimedIds(claimed)).toEqual(ids.slice(0, 3))
    expect(claimant.messages.list()).toHaveLength(3)
    expect(await quotaUsed(app, s.connectionId)).toBe(3)
    expect((await records(s)).slice(3).map((r) => [r.status, r.attempts, r.claimed_by])).toEqual([
      ['queued', 0, null],
      ['queued', 0, null],
    ])
    // Used up: the next claim is refused by the quota, with the wait until its window ends.
    const refused = await claim(s, 2)
    expect(refused.claimed).toMatchObject({ kind: 'blocked' })
    expect(refused.claimant.messages.list()).toEqual([])
    expect(await quotaUsed(app, s.connectionId)).toBe(3)
  })

  it("the plan's daily limit with fewer emails left than wanted: the rest waits for tomorrow", async () => {
    // Queued on Pro, then the account moved to Free (mail queued otherwise: a Free account's forms).
    const s = await startSender(app, 'partial-daily', { plan: 'pro' })
    const ids = await queue(s, 4)
    await app.services.sql`update accounts set plan = 'free' where id = ${s.accountId}`
    await setDailyUsed(app, s.accountId, 98)
    const { claimed } = await claim(s, 4)
    expect(claimedIds(claimed)).toEqual(ids.slice(0, 2))
    expect(await dailyUsed(app, s.accountId)).toBe(100)
    const [where] = await app.services.sql<{ usage_day: string }[]>`
      select usage_day::text from outbox where id = ${ids[0] as number}`
    expect(where?.usage_day).toBe(new Date().toISOString().slice(0, 10))
    const refused = await claim(s, 2)
    if (refused.claimed.kind !== 'blocked') throw new Error(`expected blocked, got ${refused.claimed.kind}`)
    // Until 00:00 UTC, when the count resets.
    const midnight = new Date(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`).getTime() + 86_400_000
    expect(refused.claimed.waitMs).toBeGreaterThan(midnight - Date.now() - 5_000)
    expect(refused.claimed.waitMs).toBeLessThanOrEqual(midnight - Date.now() + 1_000)
  })

  it('pacing: a bucket of 10 tokens (600 a minute) lets 10 of 12 go now, the rest after a token is due', async () => {
    const s = await startSender(app, 'partial-rate', { plan: 'pro', rate: 600 })
    const ids = await queue(s, 12)
    // A fresh bucket is full: one second of sending, and at least 10 tokens.
    const { claimed } = await claim(s, 12)
    expect(claimedIds(claimed)).toEqual(ids.slice(0, 10))
    const refused = await claim(s, 2)
    if (refused.claimed.kind === 'blocked') {
      // One token every 100 ms.
      expect(refused.claimed.waitMs).toBeGreaterThan(0)
      expect(refused.claimed.waitMs).toBeLessThanOrEqual(100)
    } else {
      // The machine was slow enough for a token to come due: exactly one message may go.
      expect(claimedIds(refused.claimed)).toEqual([ids[10]])
    }
  })
})

describe('rounds: the lanes waiting together are served by one claim, one settlement', () => {
  it('lanes asking together share one claim: a message for each, idle for the ones nothing was due for', async () => {
    const s = await startSender(app, 'lanes', { plan: 'pro' })
    const ids = await queue(s, 3)
    const connection = await queueConnection(app.services.sql, s.connectionId)
    if (!connection) throw new Error('no connection')
    const rounds = laneRounds(app.services, connection, new Claimant(), new BatchContents())
    const turns = await Promise.all(Array.from({ length: 5 }, () => rounds.next()))
    expect(turns.map((t) => (t.kind === 'message' ? t.claimed.message.id : t.kind))).toEqual([
      ...ids,
      'idle',
      'idle',
    ])
  })

  it('a limit holding the connection back is the answer of every lane waiting', async () => {
    const s = await startSender(app, 'lanes-held', { plan: 'pro', quota: { quota: 1, per: 'day' } })
    await queue(s, 3)
    const connection = await queueConnection(app.services.sql, s.connectionId)
    if (!connection) throw new Error('no connection')
    const rounds = laneRounds(app.services, connection, new Claimant(), new BatchContents())
    expect((await rounds.next()).kind).toBe('message')
    const turns = await Promise.all([rounds.next(), rounds.next()])
    expect(turns.map((t) => t.kind)).toEqual(['blocked', 'blocked'])
  })

  /** Rounds that record the items of each round and answer each item times ten. */
  function recorded() {
    const asked: number[][] = []
    let hold = Promise.resolve()
    const rounds = new Rounds<number, number>(async (items) => {
      asked.push(items)
      await hold
      if (items.includes(-1)) throw new Error('database gone')
      return items.map((x) => x * 10)
    })
    return { rounds, asked, holdNext: (p: Promise<void>) => (hold = p) }
  }

  it('work asked for in the same moment is done in one round, each asker getting its own result', async () => {
    const { rounds, asked } = recorded()
    expect(await Promise.all([1, 2, 3].map((x) => rounds.do(x)))).toEqual([10, 20, 30])
    expect(asked).toEqual([[1, 2, 3]])
  })

  it('work asked for while a round is under way waits for the next, which does all of it then waiting', async () => {
    const { rounds, asked, holdNext } = recorded()
    let release = () => {}
    holdNext(new Promise<void>((resolve) => (release = resolve)))
    const first = rounds.do(1)
    await new Promise((resolve) => setTimeout(resolve, 20))
    const later = [rounds.do(2), rounds.do(3)]
    release()
    expect(await first).toBe(10)
    expect(await Promise.all(later)).toEqual([20, 30])
    expect(asked).toEqual([[1], [2, 3]])
  })

  /** Rounds of `options` whose first round is held until the rest are waiting. */
  async function roundsOf(options: ConstructorParameters<typeof Rounds<number, number>>[1], items: number[]) {
    const asked: number[][] = []
    let release = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    const rounds = new Rounds<number, number>(async (round) => {
      asked.push(round)
      if (asked.length === 1) await held
      return round
    }, options)
    const first = rounds.do(0)
    await new Promise((resolve) => setTimeout(resolve, 20))
    const rest = items.map((x) => rounds.do(x))
    release()
    expect(await Promise.all([first, ...rest])).toEqual([0, ...items])
    return asked
  }

  it('a round takes at most maxItems of those waiting, oldest first; the rest go in the next', async () => {
    expect(await roundsOf({ maxItems: 2 }, [1, 2, 3, 4, 5])).toEqual([[0], [1, 2], [3, 4], [5]])
  })

  it('a round takes those waiting until their sizes pass maxSize; one larger than that goes alone', async () => {
    const asked = await roundsOf({ sizeOf: (x) => x, maxSize: 10 }, [4, 5, 2, 30, 1, 9, 3])
    expect(asked).toEqual([[0], [4, 5], [2], [30], [1, 9], [3]])
  })

  it("a round that fails is every one of its askers' error, and the next round is tried anew", async () => {
    const { rounds } = recorded()
    const failed = await Promise.allSettled([rounds.do(1), rounds.do(-1)])
    expect(failed.map((f) => f.status)).toEqual(['rejected', 'rejected'])
    expect(await rounds.do(4)).toBe(40)
  })
})
