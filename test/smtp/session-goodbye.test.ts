/**
 * Every SMTP session Mailroom ends, it ends with QUIT: servers otherwise log "lost connection".
 * An idle session is ended after MAILROOM_SMTP_IDLE_MS, before the socket timeout could drop it;
 * a session busy with a message when the pool closes says QUIT once it is done.
 */
import { describe, expect, it } from 'vitest'
import { composeMessage } from '../../src/smtp/compose.ts'
import { sendRaw, TransportPool } from '../../src/smtp/pool.ts'
import { sealPassword } from '../../src/smtp/secret-box.ts'
import { useTestApp } from '../support/app.ts'
import { waitFor } from '../support/queue.ts'
import { postSend, startSender } from '../support/sending.ts'
import type { SmtpSink } from '../support/smtp-sink.ts'
import { startSmtpSink } from '../support/smtp-sink.ts'

const IDLE_MS = 200
const REFUSED = 'nobody@example.com'

const app = useTestApp({ smtpIdleMs: IDLE_MS })

/** Waits until every session the sink opened has ended; how many of them said QUIT. */
async function afterEverySessionEnded(sink: SmtpSink): Promise<{ closed: number; quits: number }> {
  await waitFor(
    () => `every session to end (${sink.closed} of ${sink.connections})`,
    () => (sink.connections > 0 && sink.closed === sink.connections ? true : undefined),
  )
  return { closed: sink.closed, quits: sink.quits }
}

describe('SMTP sessions end with QUIT', () => {
  it('idle sessions, one of them after a refused recipient (RSET), are ended with QUIT after the idle time', async () => {
    const s = await startSender(app, 'goodbye', { behaviour: { rejectRecipients: [REFUSED] } })
    const replies = await Promise.all([
      ...[0, 1, 2].map((i) =>
        postSend(app, s.key, { to: `g${i}@example.com`, subject: 'Hi', text_body: 'Hi' }),
      ),
      postSend(app, s.key, { to: REFUSED, subject: 'Hi', text_body: 'Hi' }),
    ])
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 500])
    // The login check's session, and at least one of the sends'.
    expect(s.sink.connections).toBeGreaterThan(1)
    const { closed, quits } = await afterEverySessionEnded(s.sink)
    expect(quits).toBe(closed)
  })

  it('a session busy with a message when the pool closes says QUIT once the message is sent', async () => {
    const secret = 'goodbye-test-secret-0123456789abcdef'
    const sink = await startSmtpSink({ port: 587, behaviour: { dataDelayMs: 300 } })
    const pool = new TransportPool(secret, {
      allowPrivateHosts: true,
      ehloName: 'mailroom.test',
      idleMs: 20_000,
    })
    try {
      const transporter = await pool.get({
        id: 1,
        host: sink.host,
        port: sink.port,
        username: sink.username,
        password_encrypted: sealPassword(secret, sink.password),
      })
      const messageId = '<busy@mailroom.test>'
      const raw = composeMessage({
        from: 'sender@example.com',
        to: ['someone@example.com'],
        cc: [],
        subject: 'Busy',
        text: 'Hi',
        messageId,
      })
      const envelope = { from: 'sender@example.com', to: ['someone@example.com'] }
      const sent = sendRaw(transporter, { envelope, raw, messageId })
      await waitFor('the message to be in DATA', () => (sink.receiving === 1 ? true : undefined))
      await Promise.all([pool.close(), sent])
      expect(sink.messages).toHaveLength(1)
      expect(await afterEverySessionEnded(sink)).toEqual({ closed: 1, quits: 1 })
    } finally {
      await pool.close()
      await sink.close()
    }
  })
})
