/**
 * A server that limits the sessions of one client (Postfix's per-client connection limit) greets
 * one more with `421 4.7.0 too many connections`. While others of the connection's sessions
 * work, that means "fewer sessions", not "slow down": the mail waits for a session the server
 * let in and goes at full pace, the connection is neither backed off nor paused, and the
 * connection opens no more sessions than the server takes, until it tries one more later.
 */
import { describe, expect, it } from 'vitest'
import { useTestApp } from '../support/app.ts'
import { email, enqueued, waitForOutboxStatus } from '../support/queue.ts'
import { postSend, type Sender, startSender } from '../support/sending.ts'

const app = useTestApp()

/** Messages carried at a lowered session count before one more session is tried (SessionLimit). */
const RAISE_AFTER_MESSAGES = 50

/** A sender whose server takes one session at a time, from once its connection is saved. */
async function oneSession(label: string, plan: 'free' | 'pro' = 'free'): Promise<Sender> {
  const s = await startSender(app, label, { plan })
  s.sink.setBehaviour({ maxSessions: 1 })
  return s
}

async function connectionState(s: Sender) {
  const [row] = await app.services.sql<
    { consecutive_failures: number; queue_backoff_until: Date | null; paused_until: Date | null }[]
  >`select consecutive_failures, queue_backoff_until, paused_until from connections where id = ${s.connectionId}`
  return row
}

function sendAtOnce(s: Sender, count: number) {
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      postSend(app, s.key, { to: `now${i}@example.com`, subject: `At once ${i}`, text_body: 'Hello' }),
    ),
  )
}

describe('a server that takes one session at a time', () => {
  it('queued mail is all carried by the session it let in, each message tried once, the connection never backed off', async () => {
    const s = await oneSession('one-session', 'pro')
    const ids: number[] = []
    for (let i = 0; i < 10; i++) ids.push(await enqueued(app, s.key, email({ to: `q${i}@example.com` })))
    await app.worker()
    for (const id of ids) await waitForOutboxStatus(app, s.accountId, id, 'sent', 15_000)

    // Sessions beyond the first were opened, and refused.
    expect(s.sink.refusedSessions).toBeGreaterThan(0)
    expect(s.sink.mostSessionsAtOnce).toBe(1)
    expect(s.sink.messages).toHaveLength(10)
    const records = await app.services.sql<{ attempts: number; deferrals: number }[]>`
      select attempts, deferrals from outbox where account_id = ${s.accountId}`
    expect(records.map((r) => [r.attempts, r.deferrals])).toEqual(ids.map(() => [1, 0]))
    expect(await connectionState(s)).toEqual({
      consecutive_failures: 0,
      queue_backoff_until: null,
      paused_until: null,
    })
  })

  it('six sends at once are all sent; then sends wait for its session rather than open one it refuses', async () => {
    const s = await oneSession('one-session-now')
    const first = await sendAtOnce(s, 6)
    expect(first.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200])
    expect(s.sink.messages).toHaveLength(6)
    const refused = s.sink.refusedSessions
    expect(refused).toBeGreaterThan(0)

    const again = await sendAtOnce(s, 6)
    expect(again.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200])
    expect(s.sink.refusedSessions, 'no session opened beyond the one the server takes').toBe(refused)
    expect((await connectionState(s))?.consecutive_failures).toBe(0)
  })

  it('once the server takes more sessions again, the connection opens one more after a while of mail', async () => {
    const s = await oneSession('one-session-lifted')
    await sendAtOnce(s, 6)
    expect(s.sink.refusedSessions).toBeGreaterThan(0)
    s.sink.setBehaviour({ maxSessions: undefined })
    // At one session, whatever is sent at once.
    await sendAtOnce(s, 6)
    expect(s.sink.mostSessionsAtOnce).toBe(1)

    for (let i = 0; i < RAISE_AFTER_MESSAGES; i++) {
      const reply = await postSend(app, s.key, {
        to: 'one@example.com',
        subject: `One ${i}`,
        text_body: 'Hi',
      })
      expect(reply.status).toBe(200)
    }
    // Each message held a moment, so that the ones behind it need another session.
    s.sink.setBehaviour({ dataDelayMs: 50 })
    await sendAtOnce(s, 6)
    expect(s.sink.mostSessionsAtOnce).toBe(2)
  }, 30_000)
})
