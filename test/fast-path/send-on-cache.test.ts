import { describe, expect, it } from 'vitest'
import { setPlan } from '../../src/accounts/accounts.ts'
import { disableConnection, pauseConnection } from '../../src/connections/connections.ts'
import { type AttemptToRecord, recordSendAttempts } from '../../src/db/send-attempts.ts'
import type { Limits } from '../../src/db/usage.ts'
import { ExpiringCache } from '../../src/fast-path/expiring-cache.ts'
import { revokeKey, rotateKey, scopeKey } from '../../src/keys/keys.ts'
import { seedAccount, useTestApp } from '../support/app.ts'
import {
  dailyLimitBody,
  fresh,
  keyIdOf,
  outboxCount,
  postSend,
  recheckedMessage,
  type Sender,
  senderAddress,
  setDailyUsed,
  startSender,
} from '../support/sending.ts'

const app = useTestApp()

const message = (from?: string) => ({
  ...(from === undefined ? {} : { from }),
  to: 'someone@example.com',
  subject: 'Cached',
  text_body: 'Hello',
})

/** A sender whose key and connection a first send has had read (and cached). */
async function sentOnce(label: string, plan: 'free' | 'pro' = 'free'): Promise<Sender> {
  const s = await startSender(app, label, { plan })
  const first = await postSend(app, s.key, message(s.from))
  expect(first.status, JSON.stringify(first.body)).toBe(200)
  return s
}

describe('the key: what an earlier send read of it never outlives a change', () => {
  it('revoked after a send: the next send is 401 INVALID_API_KEY, records nothing and sends nothing', async () => {
    const s = await sentOnce('revoked')
    await revokeKey(app.services.sql, await keyIdOf(app, s.accountId))
    const next = await postSend(app, s.key, message(s.from))
    expect(next.status).toBe(401)
    expect(next.body).toEqual({ error: 'Invalid or expired API token' })
    expect(await outboxCount(app, s.accountId)).toBe(1)
    expect(s.sink.messages).toHaveLength(1)
  })

  it('rotated after a send: the old secret is 401 at once, the new one sends', async () => {
    const s = await sentOnce('rotated')
    const rotated = await rotateKey(app.services.sql, await keyIdOf(app, s.accountId))
    const old = await postSend(app, s.key, message(s.from))
    expect(old.status).toBe(401)
    expect(old.body).toEqual({ error: 'Invalid or expired API token' })
    const renewed = await postSend(app, rotated.key, message(s.from))
    expect(renewed.status).toBe(200)
    expect(s.sink.messages).toHaveLength(2)
  })

  it('revoked after a send: a body that fails validation is still 401, not 400', async () => {
    const s = await sentOnce('revoked-invalid')
    await revokeKey(app.services.sql, await keyIdOf(app, s.accountId))
    const next = await postSend(app, s.key, { from: s.from, subject: 'no recipient' })
    expect(next.status).toBe(401)
    expect(next.body).toEqual({ error: 'Invalid or expired API token' })
  })

  it('still usable: a body that fails validation is 400, as before any send', async () => {
    const s = await sentOnce('valid-invalid')
    const next = await postSend(app, s.key, { from: s.from, subject: 'no recipient' })
    expect(next.status).toBe(400)
    expect(next.body).toMatchObject({ success: false, error: { name: 'ZodError' } })
  })

  it('scoped to another connection after a send: the next send from the first is 403 CONNECTION_SCOPE_MISMATCH', async () => {
    const s = await sentOnce('rescoped', 'pro')
    const other = await app.services.sql<{ id: number }[]>`
      insert into connections (account_id, from_address, host, port, username, password_encrypted, rate)
      select account_id, ${senderAddress('other')}, host, port, username, password_encrypted, rate
      from connections where id = ${s.connectionId}
      returning id`
    await scopeKey(app.services.sql, await keyIdOf(app, s.accountId), other[0]?.id as number)
    const next = await postSend(app, s.key, message(s.from))
    expect(next.status).toBe(403)
    expect(next.body).toMatchObject({ code: 'CONNECTION_SCOPE_MISMATCH' })
    expect(s.sink.messages).toHaveLength(1)
  })

  it("its account's plan changed after a send: the next send counts against the new plan's limits", async () => {
    const s = await sentOnce('replanned', 'pro')
    await setDailyUsed(app, s.accountId, 100)
    expect((await postSend(app, s.key, message(s.from))).status).toBe(200)
    await setPlan(app.services.sql, s.accountId, 'free')
    await setDailyUsed(app, s.accountId, 100)
    const next = await postSend(app, s.key, message(s.from))
    expect(next.status).toBe(429)
    expect(next.body).toEqual(dailyLimitBody())
  })
})

describe('the connection: what an earlier send read of it never outlives a change', () => {
  it('disabled after a send: 403 CONNECTION_NOT_FOUND; enabled again, it sends', async () => {
    const s = await sentOnce('disabled')
    await disableConnection(app.services.sql, s.connectionId, true)
    const next = await postSend(app, s.key, message(s.from))
    expect(next.status).toBe(403)
    expect(next.body).toMatchObject({ code: 'CONNECTION_NOT_FOUND' })
    await disableConnection(app.services.sql, s.connectionId, false)
    const again = await postSend(app, s.key, message(s.from))
    expect(again.status).toBe(200)
    expect(again.body).toEqual(fresh(s.from))
  })

  it('paused after a send (the default, no `from`): 403 CONNECTION_PAUSED', async () => {
    const s = await startSender(app, 'paused')
    expect((await postSend(app, s.key, message())).status).toBe(200)
    await pauseConnection(app.services.sql, s.connectionId, 15)
    const next = await postSend(app, s.key, message())
    expect(next.status).toBe(403)
    expect(next.body).toMatchObject({ code: 'CONNECTION_PAUSED' })
    expect(s.sink.messages).toHaveLength(1)
  })
})

/** The limits of `s`'s connection: no daily limit or quota, pacing by `bucket`. */
function pacedBy(s: Sender, bucket: Limits['bucket']): Limits {
  return { accountId: s.accountId, dailyLimit: null, connectionId: s.connectionId, quota: null, bucket }
}

describe("an attempt's recheck, done in the attempt's statement", () => {
  const recheckedAttempt = async (
    ...args: Parameters<typeof recheckedMessage> extends [unknown, ...infer R] ? R : never
  ) =>
    ({ ...(await recheckedMessage(app, ...args)), idempotencyKey: null }) satisfies AttemptToRecord['attempt']

  it('one that no longer holds is refused as stale, takes nothing, and leaves the others of its round in order', async () => {
    const s = await startSender(app, 'recheck', { plan: 'pro' })
    const limits = pacedBy(s, { capacity: 2, perSecond: 0.001 })
    const other = await seedAccount(app)
    const round = [
      await recheckedAttempt(s, 'first'),
      await recheckedAttempt(s, 'wrong-plan', { plan: 'free' }),
      await recheckedAttempt(s, 'wrong-key', { keyId: other.keyId }),
      await recheckedAttempt(s, 'second'),
      await recheckedAttempt(s, 'third'),
    ]
    const results = await recordSendAttempts(app.services.sql, limits, round)
    expect(results.map((r) => r.refused)).toEqual([null, 'stale', 'stale', null, 'pacing'])
    const rows = await app.services.sql<{ subject: string }[]>`
      select subject from outbox where connection_id = ${s.connectionId} order by id`
    expect(rows.map((r) => r.subject)).toEqual(['first', 'second'])
  })

  it('a connection that reads otherwise than cached (a changed rate) is stale', async () => {
    const s = await startSender(app, 'recheck-rate', { plan: 'pro' })
    const attempt = await recheckedAttempt(s, 'rate')
    await app.services.sql`update connections set rate = rate + 1 where id = ${s.connectionId}`
    const limits = pacedBy(s, { capacity: 10, perSecond: 10 })
    expect(await recordSendAttempts(app.services.sql, limits, [attempt])).toEqual([{ refused: 'stale' }])
    expect(await outboxCount(app, s.accountId)).toBe(0)
  })
})

describe("suppressions, looked up in the attempt's statement", () => {
  const attempt = async (s: Sender, subject: string, over: Partial<AttemptToRecord['attempt']>) =>
    ({
      ...(await recheckedMessage(app, s, subject)),
      idempotencyKey: null,
      ...over,
    }) satisfies AttemptToRecord['attempt']

  it('asked to look, an attempt with a recipient suppressed for all mail records and takes nothing; the rest of its round goes on', async () => {
    const s = await startSender(app, 'suppressed-round', { plan: 'pro' })
    await app.services.sql`
      insert into suppressions (account_id, email, reason, scope, strength, source_type)
      values (${s.accountId}, 'Gone@Example.com', 'manual', 'all', 3, 'api'),
             (${s.accountId}, 'news@example.com', 'unsubscribe', 'marketing', 0, 'page')`
    const limits = pacedBy(s, { capacity: 2, perSecond: 0.001 })
    const round = [
      await attempt(s, 'bcc-gone', { bcc: ['gone@example.com'], suppressible: true }),
      await attempt(s, 'marketing-only', { to: ['news@example.com'], suppressible: true }),
      await attempt(s, 'not-asked', { cc: ['gone@example.com'] }),
      await attempt(s, 'slow-path-gone', {
        to: ['GONE@example.com'],
        suppressible: true,
        recheck: undefined,
      }),
    ]
    const results = await recordSendAttempts(app.services.sql, limits, round)
    expect(results.map((r) => r.refused)).toEqual(['suppressed', null, null, 'suppressed'])
    const rows = await app.services.sql<{ subject: string }[]>`
      select subject from outbox where connection_id = ${s.connectionId} order by id`
    expect(rows.map((r) => r.subject)).toEqual(['marketing-only', 'not-asked'])
  })

  it('a recheck that no longer holds is stale before it is suppressed', async () => {
    const s = await startSender(app, 'suppressed-stale', { plan: 'pro' })
    await app.services.sql`
      insert into suppressions (account_id, email, reason, scope, strength, source_type)
      values (${s.accountId}, 'someone@example.com', 'manual', 'all', 3, 'api')`
    const stale = await attempt(s, 'stale', { suppressible: true })
    await app.services.sql`update connections set rate = rate + 1 where id = ${s.connectionId}`
    const limits = pacedBy(s, { capacity: 10, perSecond: 10 })
    expect(await recordSendAttempts(app.services.sql, limits, [stale])).toEqual([{ refused: 'stale' }])
  })
})

describe('ExpiringCache', () => {
  it('forgets an entry after its time, and the oldest when full', () => {
    let now = 1_000
    const clock = () => now
    const cache = new ExpiringCache<number>({ ttlMs: 100, max: 2 }, clock)
    cache.set('a', 1)
    cache.set('b', 2)
    expect(cache.get('a')).toBe(1)
    cache.set('c', 3)
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([undefined, 2, 3])
    now += 99
    expect(cache.get('b')).toBe(2)
    now += 1
    expect(cache.get('b')).toBeUndefined()
    cache.forget('c')
    expect(cache.get('c')).toBeUndefined()
  })
})
