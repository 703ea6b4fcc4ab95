/**
 * The `Idempotency-Key` header of POST /send (the specification's idempotency rules;
 * docs/decisions.md, "Idempotency"): replays of successes and failures, keys in flight and their
 * lease, and the account scope of keys.
 */
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { useTestApp } from '../../support/app.ts'
import { email, failedReplay, idempotencyRequests, newKey, waitFor } from '../../support/idempotency.ts'
import { fresh, IN_FLIGHT, replayOf, setDailyUsed } from '../../support/sending.ts'

const app = useTestApp()
const { sender, send, outboxIds } = idempotencyRequests(app)

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
              ${`<stuck-${key}@example.com>`}, ${createHash('sha256').update(key).digest()},
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
