/**
 * Contract tests for the `Idempotency-Key` header of POST /send (the specification's idempotency
 * rules; docs/decisions.md, "Idempotency"): replays of successes and failures, keys in flight and their lease,
 * the account scope of keys, and keys left unused by requests refused before SMTP.
 */
import { createHash, randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { addConnection } from '../../src/connections/connections.ts'
import { seedAccount, useTestApp } from '../support/app.ts'
import {
  type Body,
  expectRetryAfter,
  fresh,
  IN_FLIGHT,
  postSend,
  type Reply,
  replayOf,
  type Sender,
  type SenderOptions,
  senderAddress,
  setDailyUsed,
  startSender,
  startSink,
} from '../support/sending.ts'

const app = useTestApp()

let seq = 0

function sender(options: SenderOptions = {}): Promise<Sender> {
  return startSender(app, 'idem', options)
}

function email(extra: Record<string, unknown> = {}) {
  return { to: 'rcpt@example.com', subject: `Idempotency ${++seq}`, text_body: 'Hello', ...extra }
}

function newKey(): string {
  return `key-${randomBytes(8).toString('hex')}`
}

function send(apiKey: string, body: unknown, idempotencyKey?: string): Promise<Reply> {
  return postSend(app, apiKey, body, idempotencyKey)
}

function failedReplay(outboxId: number, from: string): Body {
  return { success: false, replayed: true, outboxId, from, message: expect.any(String) }
}

async function outboxIds(accountId: number): Promise<number[]> {
  const rows = await app.services.sql<{ id: number }[]>`
    select id from outbox where account_id = ${accountId} order by id`
  return rows.map((row) => row.id)
}

async function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(20)
  }
}

// ------------------------------------------------------------------------------------------------

describe('same key, first request succeeded', () => {
  it('replays the original result with replayed: true and sends nothing again', async () => {
    const s = await sender()
    const key = newKey()
    const first = await send(s.key, email(), key)
    expect(first.status).toBe(200)
    expect(first.body).toEqual(fresh(s.from))
    await s.sink.waitForMessages(1)
    expect(s.sink.messages[0]?.headers.get('message-id')).toBe(first.body.messageId)

    const second = await send(s.key, email(), key)
    expect(second.status).toBe(200)
    expect(second.body).toEqual(replayOf(first.body))

    // A different body under the same key still replays the original, without an error.
    const different = await send(
      s.key,
      { to: ['other@example.com', 'more@example.com'], subject: 'Something else', html_body: '<p>Hi</p>' },
      key,
    )
    expect(different.status).toBe(200)
    expect(different.body).toEqual(replayOf(first.body))

    expect(s.sink.messages).toHaveLength(1)
    expect(await outboxIds(s.accountId)).toEqual([first.body.outboxId])
  })

  it('replays before the limits and the connection are checked', async () => {
    const s = await sender({ quota: { quota: 1, per: 'day' } })
    const key = newKey()
    const first = await send(s.key, email(), key)
    expect(first.body).toEqual(fresh(s.from))

    // The quota is now used up: a new key is refused, the used key still replays.
    const other = await send(s.key, email(), newKey())
    expect(other.status).toBe(429)
    expect(other.body.code).toBe('QUOTA_EXCEEDED')
    expect((await send(s.key, email(), key)).body).toEqual(replayOf(first.body))

    // So does it with the daily limit reached and the connection disabled.
    await setDailyUsed(app, s.accountId, 100)
    await app.services.sql`update connections set disabled = true where id = ${s.connectionId}`
    const replay = await send(s.key, email(), key)
    expect(replay.status).toBe(200)
    expect(replay.body).toEqual(replayOf(first.body))
    expect(s.sink.messages).toHaveLength(1)
  })

  it('checks the body before the key: an invalid body under a used key is still refused', async () => {
    const s = await sender()
    const key = newKey()
    const first = await send(s.key, email(), key)
    expect(first.body).toEqual(fresh(s.from))

    const invalid = await send(s.key, { to: 'rcpt@example.com', subject: 'No body' }, key)
    expect(invalid.status).toBe(400)
    expect(invalid.body).toEqual({
      success: false,
      error: { name: 'ZodError', issues: expect.any(Array) },
    })

    const tooMany = Array.from({ length: 11 }, (_, i) => `r${i}@example.com`)
    const refused = await send(s.key, email({ to: tooMany }), key)
    expect(refused.status).toBe(400)
    expect(refused.body).toEqual({
      code: 'TOO_MANY_RECIPIENTS',
      message: expect.any(String),
      details: { limit: 10, used: 11 },
    })
    expect(s.sink.messages).toHaveLength(1)
  })
})

describe('same key, first request failed', () => {
  it('replays the failure as 200 success: false and sends nothing; a new key sends', async () => {
    const s = await sender({ behaviour: { rejectRecipients: ['nobody@example.com'] } })
    const key = newKey()
    const first = await send(s.key, email({ to: 'nobody@example.com' }), key)
    expect(first.status).toBe(500)
    expect(first.body).toEqual({ code: 'INTERNAL_ERROR', message: expect.any(String) })
    const [failedId] = await outboxIds(s.accountId)
    expect(failedId).toEqual(expect.any(Number))

    // Even with the cause fixed, the same key replays the failure.
    const retry = await send(s.key, email({ to: 'rcpt@example.com' }), key)
    expect(retry.status).toBe(200)
    expect(retry.body).toEqual(failedReplay(failedId as number, s.from))
    expect(s.sink.messages).toHaveLength(0)

    const again = await send(s.key, email({ to: 'nobody@example.com' }), key)
    expect(again.body).toEqual(failedReplay(failedId as number, s.from))

    const next = await send(s.key, email({ to: 'rcpt@example.com' }), newKey())
    expect(next.status).toBe(200)
    expect(next.body).toEqual(fresh(s.from))
    expect(next.body.outboxId).not.toBe(failedId)
    await s.sink.waitForMessages(1)
    expect(s.sink.messages).toHaveLength(1)
  })
})

describe('same key, first request in flight', () => {
  it('answers IDEMPOTENCY_KEY_IN_FLIGHT while the first waits on SMTP, then replays it', async () => {
    const s = await sender({ behaviour: { dataDelayMs: 1500 } })
    const key = newKey()
    const requestA = send(s.key, email(), key)

    await waitFor('the attempt to reach SMTP', async () => {
      const rows = await app.services.sql`
        select 1 from outbox where account_id = ${s.accountId} and status = 'sending'`
      return rows.length > 0
    })
    const requestB = await send(s.key, email(), key)
    expect(requestB.status).toBe(400)
    expect(requestB.body).toEqual(IN_FLIGHT)

    const a = await requestA
    expect(a.status).toBe(200)
    expect(a.body).toEqual(fresh(s.from))

    const later = await send(s.key, email(), key)
    expect(later.status).toBe(200)
    expect(later.body).toEqual(replayOf(a.body))
    expect(s.sink.messages).toHaveLength(1)
  })

  it('holds a key whose attempt died in flight until its lease runs out, then replays a failure', async () => {
    const s = await sender()
    const key = newKey()
    // An attempt whose process died after recording it: still `sending`, lease in the future.
    const [stuck] = await app.services.sql<{ id: number }[]>`
      insert into outbox (account_id, connection_id, status, from_address, to_addresses, subject, message_id,
                          idempotency_key_sha256, lease_expires_at)
      values (${s.accountId}, ${s.connectionId}, 'sending', ${s.from}, ${['rcpt@example.com']}, 'Stuck',
              ${`<stuck-${seq}@example.com>`}, ${createHash('sha256').update(key).digest()},
              now() + interval '5 minutes')
      returning id`
    const stuckId = stuck?.id as number

    const during = await send(s.key, email(), key)
    expect(during.status).toBe(400)
    expect(during.body).toEqual(IN_FLIGHT)

    await app.services
      .sql`update outbox set lease_expires_at = now() + interval '2 seconds' where id = ${stuckId}`
    expect((await send(s.key, email(), key)).body).toEqual(IN_FLIGHT)

    await app.services
      .sql`update outbox set lease_expires_at = now() - interval '1 second' where id = ${stuckId}`
    const after = await send(s.key, email(), key)
    expect(after.status).toBe(200)
    expect(after.body).toEqual(failedReplay(stuckId, s.from))
    expect((await send(s.key, email(), key)).body).toEqual(failedReplay(stuckId, s.from))

    expect(s.sink.messages).toHaveLength(0)
    expect(await outboxIds(s.accountId)).toEqual([stuckId])
  })
})

describe('keys are scoped to the account', () => {
  it('sends normally under a key another account already used', async () => {
    const a = await sender()
    const b = await sender()
    const key = newKey()
    const first = await send(a.key, email(), key)
    expect(first.body).toEqual(fresh(a.from))

    const other = await send(b.key, email(), key)
    expect(other.status).toBe(200)
    expect(other.body).toEqual(fresh(b.from))
    expect(other.body.outboxId).not.toBe(first.body.outboxId)

    await b.sink.waitForMessages(1)
    expect(a.sink.messages).toHaveLength(1)
    expect(b.sink.messages).toHaveLength(1)
    // Each account's key still replays its own result.
    expect((await send(a.key, email(), key)).body).toEqual(replayOf(first.body))
    expect((await send(b.key, email(), key)).body).toEqual(replayOf(other.body))
  })
})

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
