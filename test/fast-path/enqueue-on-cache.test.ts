import { describe, expect, it } from 'vitest'
import { setPlan } from '../../src/accounts/accounts.ts'
import { disableConnection, pauseConnection } from '../../src/connections/connections.ts'
import type { Recheck } from '../../src/db/fast-path.ts'
import { enqueueRechecked, type QueuedMessage } from '../../src/db/queue-entry.ts'
import { revokeKey, rotateKey } from '../../src/keys/keys.ts'
import { seedAccount, useTestApp } from '../support/app.ts'
import { humanText } from '../support/matchers.ts'
import { email, postEnqueue } from '../support/queue.ts'
import {
  keyIdOf,
  outboxCount,
  postSend,
  recheckedMessage,
  type Sender,
  startSender,
} from '../support/sending.ts'

const app = useTestApp()

const INVALID_KEY = { status: 401, body: { error: 'Invalid or expired API token' } }
const FEATURE_NOT_AVAILABLE = {
  status: 403,
  body: {
    code: 'FEATURE_NOT_AVAILABLE',
    message: humanText,
    details: { feature: 'async_sending', upgradeRequired: true },
  },
}

/** A Pro sender whose key and connection a first accepted /enqueue has had read (and cached). */
async function enqueuedOnce(label: string): Promise<Sender> {
  const s = await startSender(app, label, { plan: 'pro' })
  const first = await postEnqueue(app, s.key, email({ from: s.from }))
  expect(first.status, JSON.stringify(first.body)).toBe(200)
  return s
}

const statusAndBody = ({ status, body }: { status: number; body: unknown }) => ({ status, body })

describe('POST /enqueue on what an earlier request read', () => {
  /**
   * Whether an enqueue by `s` went ahead without its key looked up: a lookup marks the key used
   * when it was last marked over a minute ago, so a mark set long before is kept only then.
   */
  async function enqueuedUnlookedUp(s: Sender): Promise<boolean> {
    const keyId = await keyIdOf(app, s.accountId)
    const long = new Date('2026-01-02T03:04:05Z')
    await app.services.sql`update api_keys set last_used_at = ${long} where id = ${keyId}`
    expect((await postEnqueue(app, s.key, email({ from: s.from }))).status).toBe(200)
    const [key] = await app.services.sql<{ last_used_at: Date }[]>`
      select last_used_at from api_keys where id = ${keyId}`
    return key?.last_used_at.getTime() === long.getTime()
  }

  it('goes ahead without looking its key up again', async () => {
    const s = await enqueuedOnce('unread')
    expect(await enqueuedUnlookedUp(s)).toBe(true)
    expect(await outboxCount(app, s.accountId, 'queued')).toBe(2)
  })

  it('goes ahead on what a /send read: the connection a send found serves the next enqueue', async () => {
    const s = await startSender(app, 'after-send', { plan: 'pro' })
    expect((await postSend(app, s.key, email({ from: s.from }))).status).toBe(200)
    expect(await enqueuedUnlookedUp(s)).toBe(true)
  })

  it('a key revoked after an enqueue: 401, and nothing is queued', async () => {
    const s = await enqueuedOnce('revoked')
    await revokeKey(app.services.sql, await keyIdOf(app, s.accountId))
    expect(statusAndBody(await postEnqueue(app, s.key, email({ from: s.from })))).toEqual(INVALID_KEY)
    expect(await outboxCount(app, s.accountId, 'queued')).toBe(1)
  })

  it('a key revoked after an enqueue: a body that fails validation is still 401, not 400', async () => {
    const s = await enqueuedOnce('revoked-invalid')
    await revokeKey(app.services.sql, await keyIdOf(app, s.accountId))
    expect(statusAndBody(await postEnqueue(app, s.key, { subject: 'no recipient' }))).toEqual(INVALID_KEY)
  })

  it('a key rotated after an enqueue: the old secret is 401 at once, the new one queues', async () => {
    const s = await enqueuedOnce('rotated')
    const rotated = await rotateKey(app.services.sql, await keyIdOf(app, s.accountId))
    expect(statusAndBody(await postEnqueue(app, s.key, email({ from: s.from })))).toEqual(INVALID_KEY)
    expect((await postEnqueue(app, rotated.key, email({ from: s.from }))).status).toBe(200)
    expect(await outboxCount(app, s.accountId, 'queued')).toBe(2)
  })

  it('an account moved to Free after an enqueue: 403 FEATURE_NOT_AVAILABLE, and nothing is queued', async () => {
    const s = await enqueuedOnce('replanned')
    await setPlan(app.services.sql, s.accountId, 'free')
    expect(statusAndBody(await postEnqueue(app, s.key, email({ from: s.from })))).toEqual(
      FEATURE_NOT_AVAILABLE,
    )
    expect(await outboxCount(app, s.accountId, 'queued')).toBe(1)
  })

  it('an account moved to Free after an enqueue: a body that fails validation is 403, not 400', async () => {
    const s = await enqueuedOnce('replanned-invalid')
    await setPlan(app.services.sql, s.accountId, 'free')
    expect(statusAndBody(await postEnqueue(app, s.key, { subject: 'no recipient' }))).toEqual(
      FEATURE_NOT_AVAILABLE,
    )
  })

  it('a connection disabled after an enqueue: 403 CONNECTION_NOT_FOUND; a paused one still queues', async () => {
    const s = await enqueuedOnce('disabled')
    await pauseConnection(app.services.sql, s.connectionId, 15)
    expect((await postEnqueue(app, s.key, email({ from: s.from }))).status).toBe(200)
    await disableConnection(app.services.sql, s.connectionId, true)
    const next = await postEnqueue(app, s.key, email({ from: s.from }))
    expect(next.status).toBe(403)
    expect(next.body).toMatchObject({ code: 'CONNECTION_NOT_FOUND' })
    expect(await outboxCount(app, s.accountId, 'queued')).toBe(2)
  })
})

describe("a queued message's recheck, done in the statement that queues it", () => {
  it('one that no longer holds is stale and not queued; the others are, with ids in their order', async () => {
    const s = await startSender(app, 'queue-recheck', { plan: 'pro' })
    const other = await seedAccount(app)
    const message = (subject: string, over: { plan?: 'free' | 'pro'; keyId?: number } = {}) =>
      recheckedMessage(app, s, subject, over)
    const { recheck: _, ...unrechecked } = await message('unrechecked')
    const rateChanged = await message('rate changed')
    const round = [
      await message('first'),
      await message('wrong-plan', { plan: 'free' }),
      await message('wrong-key', { keyId: other.keyId }),
      unrechecked,
      await message('second'),
    ]
    const queued = await enqueueRechecked(app.services.sql, s.connectionId, round)
    expect(queued.map((q) => (q === 'stale' ? q : 'queued'))).toEqual([
      'queued',
      'stale',
      'stale',
      'queued',
      'queued',
    ])
    const rows = await app.services.sql<{ id: number; subject: string }[]>`
      select id, subject from outbox where connection_id = ${s.connectionId} order by id`
    expect(rows.map((r) => r.subject)).toEqual(['first', 'unrechecked', 'second'])
    expect(queued.flatMap((q) => (typeof q === 'string' ? [] : [q.id]))).toEqual(rows.map((r) => r.id))

    await app.services.sql`update connections set rate = rate + 1 where id = ${s.connectionId}`
    expect(await enqueueRechecked(app.services.sql, s.connectionId, [rateChanged])).toEqual(['stale'])
  })
})

describe('suppressions, looked up in the statement that queues', () => {
  it('asked to look, a message with a recipient suppressed for all mail is not queued; the rest of its round is', async () => {
    const s = await startSender(app, 'queue-suppressed', { plan: 'pro' })
    await app.services.sql`
      insert into suppressions (account_id, email, reason, scope, strength, source_type)
      values (${s.accountId}, 'Gone@Example.com', 'hard_bounce', 'all', 5, 'email'),
             (${s.accountId}, 'news@example.com', 'unsubscribe', 'marketing', 0, 'page')`
    const message = async (subject: string, over: Partial<QueuedMessage>) => ({
      ...(await recheckedMessage(app, s, subject)),
      ...over,
    })
    const stale = await message('stale and gone', { cc: ['gone@example.com'], suppressible: true })
    const round = [
      await message('gone', { bcc: ['GONE@example.com'], suppressible: true }),
      await message('marketing only', { to: ['news@example.com'], suppressible: true }),
      await message('not asked', { to: ['gone@example.com'] }),
      { ...stale, recheck: { ...(stale.recheck as Recheck), plan: 'free' as const } },
    ]
    const queued = await enqueueRechecked(app.services.sql, s.connectionId, round)
    expect(queued.map((q) => (typeof q === 'string' ? q : 'queued'))).toEqual([
      'suppressed',
      'queued',
      'queued',
      'stale',
    ])
    const rows = await app.services.sql<{ subject: string }[]>`
      select subject from outbox where connection_id = ${s.connectionId} order by id`
    expect(rows.map((r) => r.subject)).toEqual(['marketing only', 'not asked'])
  })
})
