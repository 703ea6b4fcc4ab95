/**
 * The `Idempotency-Key` header of POST /send (docs/decisions.md, "Idempotency"): a request
 * refused before SMTP or pushed back by the provider leaves its key unused, and a key may be
 * missing, empty or very long.
 */
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { addConnection } from '../../../src/connections/connections.ts'
import { seedAccount, useTestApp } from '../../support/app.ts'
import { email, idempotencyRequests, newKey } from '../../support/idempotency.ts'
import {
  expectRetryAfter,
  fresh,
  replayOf,
  senderAddress,
  setDailyUsed,
  startSink,
} from '../../support/sending.ts'

const app = useTestApp()
const { sender, send } = idempotencyRequests(app)

describe('a request refused before SMTP leaves the key unused', () => {
  it('after a validation error', async () => {
    const s = await sender()
    const key = newKey()
    const invalid = await send(s.key, { to: 'not-an-address', subject: 'Hi', text_body: 'x' }, key)
    expect(invalid.status).toBe(400)

    const ok = await send(s.key, email(), key)
    expect(ok.status).toBe(200)
    expect(ok.body).toEqual(fresh(s.from))
    expect(s.sink.messages).toHaveLength(1)
  })

  it('after 403 NO_CONNECTION', async () => {
    const s = await startSink(app)
    const seeded = await seedAccount(app)
    const key = newKey()
    const refused = await send(seeded.key, email(), key)
    expect(refused.status).toBe(403)
    expect(refused.body).toEqual({ code: 'NO_CONNECTION', message: expect.any(String) })

    const from = senderAddress('idem')
    await addConnection(app.services, { accountId: seeded.account.id, ...s.login, from, rate: 6000 })
    const ok = await send(seeded.key, email(), key)
    expect(ok.status).toBe(200)
    expect(ok.body).toEqual(fresh(from))
    expect(s.messages).toHaveLength(1)
  })

  it('after 403 CONNECTION_NOT_FOUND for an unknown from', async () => {
    const s = await sender()
    const key = newKey()
    const refused = await send(s.key, email({ from: 'stranger@example.com' }), key)
    expect(refused.status).toBe(403)
    expect(refused.body).toEqual({ code: 'CONNECTION_NOT_FOUND', message: expect.any(String) })

    const ok = await send(s.key, email({ from: s.from }), key)
    expect(ok.body).toEqual(fresh(s.from))
    expect(s.sink.messages).toHaveLength(1)
  })

  it('after 429 QUOTA_EXCEEDED', async () => {
    const s = await sender({ quota: { quota: 1, per: 'day' } })
    expect((await send(s.key, email())).status).toBe(200)
    const key = newKey()
    const refused = await send(s.key, email(), key)
    expect(refused.status).toBe(429)
    expect(refused.body.code).toBe('QUOTA_EXCEEDED')

    await app.services.sql`update connections set quota = 2 where id = ${s.connectionId}`
    const ok = await send(s.key, email(), key)
    expect(ok.status).toBe(200)
    expect(ok.body).toEqual(fresh(s.from))
    expect(s.sink.messages).toHaveLength(2)
  })

  it('after 429 DAILY_LIMIT_REACHED', async () => {
    const s = await sender()
    await setDailyUsed(app, s.accountId, 100)
    const key = newKey()
    const refused = await send(s.key, email(), key)
    expect(refused.status).toBe(429)
    expect(refused.body.code).toBe('DAILY_LIMIT_REACHED')

    await app.services.sql`update daily_usage set used = 99 where account_id = ${s.accountId}`
    const ok = await send(s.key, email(), key)
    expect(ok.body).toEqual(fresh(s.from))
    expect(s.sink.messages).toHaveLength(1)
  })

  it('after 429 RATE_LIMITED from pacing', async () => {
    const s = await sender()
    await app.services.sql`update connections set rate = 60 where id = ${s.connectionId}`
    await app.services.sql`
      insert into connection_pacing (connection_id, tokens, refilled_at) values (${s.connectionId}, 0, now())`
    const key = newKey()
    const refused = await send(s.key, email(), key)
    expect(refused.status).toBe(429)
    expect(refused.body.code).toBe('RATE_LIMITED')

    await app.services.sql`
      update connection_pacing set tokens = 0, refilled_at = now() - interval '2 seconds'
      where connection_id = ${s.connectionId}`
    const ok = await send(s.key, email(), key)
    expect(ok.body).toEqual(fresh(s.from))
    expect(s.sink.messages).toHaveLength(1)
  })
})

describe('provider push-back leaves the key reusable', () => {
  it('answers 429 RATE_LIMITED to a 451 reply; the same key sends once the server accepts again', async () => {
    const s = await sender({
      quota: { quota: 5, per: 'day' },
      behaviour: { rejectData: { code: 451, message: '4.7.1 Try again later' } },
    })
    const key = newKey()
    const pushed = await send(s.key, email(), key)
    expect(pushed.status).toBe(429)
    expect(pushed.body).toEqual({
      code: 'RATE_LIMITED',
      message: expect.any(String),
      details: { retryAfter: expect.any(Number) },
    })
    expectRetryAfter(pushed)
    expect(s.sink.messages).toHaveLength(0)

    s.sink.setBehaviour({ rejectData: undefined })
    const ok = await send(s.key, email(), key)
    expect(ok.status).toBe(200)
    expect(ok.body).toEqual(fresh(s.from))
    await s.sink.waitForMessages(1)
    expect(s.sink.messages).toHaveLength(1)
    // Only the message that went out used quota.
    const [row] = await app.services.sql<{ used: number }[]>`
      select coalesce(sum(used), 0)::int as used from quota_usage where connection_id = ${s.connectionId}`
    expect(row?.used).toBe(1)

    expect((await send(s.key, email(), key)).body).toEqual(replayOf(ok.body))
  })
})

describe('without the header, or with an empty one', () => {
  it.each([
    ['no header', undefined],
    ['an empty header', ''],
  ])('sends two messages for two identical requests (%s)', async (_label, idempotencyKey) => {
    const s = await sender()
    const body = email()
    const first = await send(s.key, body, idempotencyKey)
    const second = await send(s.key, body, idempotencyKey)
    expect(first.body).toEqual(fresh(s.from))
    expect(second.body).toEqual(fresh(s.from))
    expect(second.body.outboxId).not.toBe(first.body.outboxId)
    expect(second.body.messageId).not.toBe(first.body.messageId)
    await s.sink.waitForMessages(2)
    expect(s.sink.messages).toHaveLength(2)
  })
})

describe('key length', () => {
  it('takes a 10,000-character key, telling it apart from one that differs only in its last character', async () => {
    const s = await sender()
    const stem = randomBytes(5000).toString('hex').slice(0, 9_999)
    const key = `${stem}a`
    const first = await send(s.key, email(), key)
    expect(first.status).toBe(200)
    expect(first.body).toEqual(fresh(s.from))
    expect((await send(s.key, email(), key)).body).toEqual(replayOf(first.body))

    const sibling = await send(s.key, email(), `${stem}b`)
    expect(sibling.status).toBe(200)
    expect(sibling.body).toEqual(fresh(s.from))
    expect(sibling.body.outboxId).not.toBe(first.body.outboxId)
    await s.sink.waitForMessages(2)
    expect(s.sink.messages).toHaveLength(2)
  })
})
