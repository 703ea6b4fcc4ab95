import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, inject, it } from 'vitest'
import { LARGE_BODY_CHARS } from '../../src/http/body-turns.ts'
import { startRelay } from '../../src/relay/relay.ts'
import { useTestApp } from '../support/app.ts'
import { waitFor } from '../support/queue.ts'
import { startSender } from '../support/sending.ts'
import { plainAuth, rawSession } from './raw-session.ts'
import { refusal, relayClient, useRelay } from './relay-fixture.ts'

const MAX_BYTES = 1024 * 1024

const app = useTestApp({
  relay: {
    port: 0,
    securePort: 0,
    tlsCertFile: undefined,
    tlsKeyFile: undefined,
    maxBytes: MAX_BYTES,
    sessionsPerAddress: 2,
    timeoutSeconds: 1,
    messagesPerSession: 2,
  },
})
const fixture = useRelay(app)

async function bufferedBytes(): Promise<number> {
  return (await app.services.metrics.relayBufferedBytes.get()).values[0]?.value ?? 0
}

function session(localAddress: string) {
  return rawSession('127.0.0.1', fixture.relay.ports.smtp ?? 0, localAddress)
}

/** A session in clear text (this host may AUTH so) that has just been told to send its message. */
async function inData(key: string, from: string, localAddress: string) {
  const client = session(localAddress)
  await client.greeting
  await client.command('EHLO app.example')
  expect(await client.command(plainAuth(key))).toMatch(/^235 /)
  expect(await client.command(`MAIL FROM:<${from}>`)).toMatch(/^250 /)
  expect(await client.command('RCPT TO:<a@example.com>')).toMatch(/^250 /)
  expect(await client.command('DATA')).toMatch(/^354 /)
  return client
}

describe('the SMTP relay bounds what one client holds', () => {
  it('announces its size limit and refuses a larger message with 552 5.3.4', async () => {
    const s = await startSender(app, 'too-big', { plan: 'pro' })
    const probe = session('127.0.0.51')
    await probe.greeting
    expect(await probe.command('EHLO app.example')).toMatch(new RegExp(`^250[- ]SIZE ${MAX_BYTES}\r$`, 'm'))
    expect(await probe.command(plainAuth(s.key))).toMatch(/^235 /)
    // A client that declares its size hears at once.
    expect(await probe.command(`MAIL FROM:<${s.from}> SIZE=${MAX_BYTES + 1}`)).toMatch(/^552 /)
    probe.end()
    const big = { from: s.from, to: ['a@example.com'], subject: 'big', text: 'x'.repeat(MAX_BYTES + 1) }
    const reply = await refusal(
      relayClient(fixture.relay, s.key, { localAddress: '127.0.0.52' }).sendMail(big),
    )
    expect(reply.response).toBe(`552 5.3.4 Message too big: at most ${MAX_BYTES} bytes`)
    expect(await bufferedBytes()).toBe(0)
  })

  it('offers 8BITMIME and SMTPUTF8', async () => {
    const probe = session('127.0.0.53')
    await probe.greeting
    const ehlo = await probe.command('EHLO app.example')
    expect(ehlo).toContain('250-8BITMIME')
    expect(ehlo).toContain('SMTPUTF8')
    probe.end()
  })

  it('greets a client address over its session bound with 421 and closes; other addresses still get in', async () => {
    const first = session('127.0.0.54')
    const second = session('127.0.0.54')
    expect(await first.greeting).toMatch(/^220 /)
    expect(await second.greeting).toMatch(/^220 /)
    const third = session('127.0.0.54')
    expect(await third.greeting).toBe('421 4.7.0 Too many sessions from your address; try again later\r\n')
    await third.closed
    const elsewhere = session('127.0.0.55')
    expect(await elsewhere.greeting).toMatch(/^220 /)
    first.end()
    await first.closed
    await waitFor('the closed session to be let go', () => (fixture.relay.sessions <= 2 ? true : undefined))
    const again = session('127.0.0.54')
    expect(await again.greeting).toMatch(/^220 /)
    for (const s of [second, elsewhere, again]) s.end()
  })

  it('ends a session at its message bound: the next MAIL FROM gets 421 4.7.0', async () => {
    const s = await startSender(app, 'per-session', { plan: 'pro' })
    const client = session('127.0.0.58')
    await client.greeting
    await client.command('EHLO app.example')
    expect(await client.command(plainAuth(s.key))).toMatch(/^235 /)
    for (let i = 1; i <= 2; i++) {
      expect(await client.command(`MAIL FROM:<${s.from}>`)).toMatch(/^250 /)
      expect(await client.command('RCPT TO:<a@example.com>')).toMatch(/^250 /)
      expect(await client.command('DATA')).toMatch(/^354 /)
      expect(await client.command(`Subject: message ${i}\r\n\r\nHello.\r\n.`)).toMatch(
        /^250 2\.0\.0 Queued as email /,
      )
    }
    expect(await client.command(`MAIL FROM:<${s.from}>`)).toBe(
      '421 4.7.0 Too many messages in this session; reconnect to send more\r\n',
    )
    await client.closed
  })

  it('drops an idle session with 421', async () => {
    const idle = session('127.0.0.56')
    expect(await idle.greeting).toMatch(/^220 /)
    expect(await idle.closed).toMatch(/^421 /)
  })

  it("holds one large message of an account at a time: the next waits for the first's turn to end", async () => {
    const s = await startSender(app, 'turns', { plan: 'pro' })
    const large = `Subject: large\r\n\r\n${`${'z'.repeat(76)}\r\n`.repeat(Math.ceil(LARGE_BODY_CHARS / 60))}`
    const stalled = await inData(s.key, s.from, '127.0.0.59')
    stalled.write(large)
    await waitFor('the first message to be held', async () =>
      (await bufferedBytes()) >= LARGE_BODY_CHARS ? true : undefined,
    )
    const events: string[] = []
    const dropped = stalled.closed.then(() => events.push('first dropped'))
    // Both sessions wait under the same timeout: the second starts well after the first's last
    // byte, so that the first is dropped while the second still waits.
    await sleep(500)
    const next = await inData(s.key, s.from, '127.0.0.60')
    const queued = next.command(`${large}.`).then((reply) => events.push(`second: ${reply.slice(0, 3)}`))
    await Promise.all([dropped, queued])
    expect(events).toEqual(['first dropped', 'second: 250'])
    next.end()
  })

  it('drops a client that stalls mid-DATA and lets go of what it sent', async () => {
    const s = await startSender(app, 'stall', { plan: 'pro' })
    const stalled = await inData(s.key, s.from, '127.0.0.57')
    // A large message, which takes its account's turn of the large bodies, then nothing more.
    stalled.write(`Subject: stalled\r\n\r\n${'y'.repeat(76)}\r\n`.repeat(Math.ceil(LARGE_BODY_CHARS / 60)))
    await waitFor('the message to be held', async () =>
      (await bufferedBytes()) >= LARGE_BODY_CHARS ? true : undefined,
    )
    expect(await stalled.closed).toMatch(/^421 /)
    await waitFor('the stalled message to be let go', async () =>
      (await bufferedBytes()) === 0 ? true : undefined,
    )
    await waitFor('the stalled session to end', () => (fixture.relay.sessions === 0 ? true : undefined))
  })
})

describe('a stopping relay', () => {
  it('ends the sessions between messages at once and lets one in the middle of its message finish it', async () => {
    const s = await startSender(app, 'stopping', { plan: 'pro' })
    // A session timeout longer than the shutdown's grace: only the stop can end the idle session.
    const { config } = app.services
    const patient = { ...app.services, config: { ...config, relay: { ...config.relay, timeoutSeconds: 60 } } }
    const relay = await startRelay(patient, { port: 0, securePort: null, tls: inject('tls') })
    const open = async (localAddress: string) => {
      const client = rawSession('127.0.0.1', relay.ports.smtp ?? 0, localAddress)
      await client.greeting
      await client.command('EHLO app.example')
      expect(await client.command(plainAuth(s.key))).toMatch(/^235 /)
      return client
    }
    const idle = await open('127.0.0.61')
    const sending = await open('127.0.0.62')
    expect(await sending.command(`MAIL FROM:<${s.from}>`)).toMatch(/^250 /)
    expect(await sending.command('RCPT TO:<a@example.com>')).toMatch(/^250 /)
    expect(await sending.command('DATA')).toMatch(/^354 /)
    sending.write('Subject: last one\r\n\r\n')
    const stopped = relay.stop()
    expect(await idle.closed).toBe('421 Server shutting down\r\n')
    expect(await sending.command('Hello.\r\n.')).toMatch(/^250 2\.0\.0 Queued as email /)
    // Between messages now, it hears the stop at its next command.
    expect(await sending.command('QUIT')).toBe('421 Server shutting down\r\n')
    await stopped
  })
})
