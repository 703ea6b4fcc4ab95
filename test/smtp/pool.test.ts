/**
 * A connection's pool of SMTP sessions serves the mail a caller waits for (POST /send) before
 * the queue's: a send-now never waits behind a queue run's backlog for a free session.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { composeMessage } from '../../src/smtp/compose.ts'
import { sendRaw, TransportPool } from '../../src/smtp/pool.ts'
import { sealPassword } from '../../src/smtp/secret-box.ts'
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.ts'

const SECRET = 'pool-test-secret-0123456789abcdef'
/** nodemailer's pool keeps up to five sessions per connection. */
const SESSIONS = 5

let sink: SmtpSink
let pool: TransportPool
let passwordEncrypted: string

beforeAll(async () => {
  // Each message takes a while to be answered, so the queue behind the busy sessions stays put.
  sink = await startSmtpSink({ port: 587, behaviour: { dataDelayMs: 150 } })
  pool = new TransportPool(SECRET, { allowPrivateHosts: true, ehloName: 'mailroom.test', idleMs: 20_000 })
  // Sealed once: the pool is kept while the login reads the same.
  passwordEncrypted = sealPassword(SECRET, sink.password)
})
afterAll(async () => {
  await pool.close()
  await sink.close()
})

async function send(name: string, callerWaits: boolean) {
  const transporter = await pool.get({
    id: 1,
    host: sink.host,
    port: sink.port,
    username: sink.username,
    password_encrypted: passwordEncrypted,
  })
  const messageId = `<${name}@mailroom.test>`
  const raw = composeMessage({
    from: 'sender@example.com',
    to: ['someone@example.com'],
    cc: [],
    subject: name,
    text: 'Hi',
    messageId,
  })
  const envelope = { from: 'sender@example.com', to: ['someone@example.com'] }
  return sendRaw(transporter, { envelope, raw, messageId, callerWaits })
}

/** The order in which the sink took the messages, by subject. */
const arrivals = () => sink.messages.map((m) => m.headers.get('subject'))

async function untilEverySessionIsBusy() {
  for (let i = 0; sink.receiving < SESSIONS; i++) {
    if (i > 500) throw new Error(`only ${sink.receiving} sessions became busy`)
    await sleep(10)
  }
}

describe("a connection's pool", () => {
  it('serves messages a caller waits for ahead of queued mail already waiting for a session', async () => {
    sink.messages.length = 0
    const queued = Array.from({ length: 15 }, (_, i) => send(`queued-${i}`, false))
    await untilEverySessionIsBusy()
    // Ten queued messages now wait for a session; two sends-now come after them.
    const now = [send('now-0', true), send('now-1', true)]
    await Promise.all([...queued, ...now])
    const order = arrivals()
    expect(order).toHaveLength(17)
    // Taken by the first sessions to free up, with the next round of queued mail beside them
    // (in order, they would be the last two).
    for (const name of ['now-0', 'now-1']) expect(order.indexOf(name)).toBeLessThan(2 * SESSIONS)
    for (let i = 10; i < 15; i++) expect(order.indexOf(`queued-${i}`)).toBeGreaterThan(order.indexOf('now-1'))
  })

  it('keeps queued mail in the order it came while no caller waits', async () => {
    sink.messages.length = 0
    const queued = Array.from({ length: 12 }, (_, i) => send(`in-order-${i}`, false))
    await untilEverySessionIsBusy()
    const late = send('in-order-late', false)
    await Promise.all([...queued, late])
    const order = arrivals()
    expect(order).toHaveLength(13)
    // The last one queued is taken last: it arrives after every message queued before it was
    // taken by a session (the five sessions may answer their last messages in any order).
    expect(order.indexOf('in-order-late')).toBeGreaterThanOrEqual(12 - SESSIONS + 1)
  })
})
