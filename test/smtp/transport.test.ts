import tls from 'node:tls'
import nodemailer from 'nodemailer'
import { afterAll, describe, expect, inject, it } from 'vitest'
import { SmtpHostError } from '../../src/smtp/host.ts'
import { outcomeOfError } from '../../src/smtp/outcome.ts'
import {
  isAuthFailure,
  type SmtpLogin,
  SmtpLoginError,
  smtpReason,
  smtpTransportOptions,
  verifySmtpLogin,
} from '../../src/smtp/transport.ts'
import { type SmtpSink, type SmtpSinkOptions, startSmtpSink } from '../support/smtp-sink.ts'
import { makeCertificate } from '../support/tls.ts'

const sinks: SmtpSink[] = []
afterAll(async () => {
  await Promise.all(sinks.map((s) => s.close()))
})

async function sink(options: SmtpSinkOptions): Promise<SmtpSink> {
  const started = await startSmtpSink(options)
  sinks.push(started)
  return started
}

/** What a send's outcome makes of an error: push-back, out of reach, or refused or deferred. */
function kindOf(error: unknown): 'pushback' | 'unreachable' | 'rejected' {
  const outcome = outcomeOfError(['someone@example.com'], error)
  if (outcome.pushback !== undefined) return 'pushback'
  return outcome.unreachable !== undefined ? 'unreachable' : 'rejected'
}

/** Sends one message the way product code does: options from smtpTransportOptions, no `ca`. */
async function send(login: SmtpLogin, servername?: string, to = 'someone@example.com') {
  const transport = nodemailer.createTransport(
    smtpTransportOptions(login, { address: login.host, servername }),
  )
  try {
    return await transport.sendMail({ from: 'sender@example.com', to, subject: 'Hello', text: 'Hi there' })
  } finally {
    transport.close()
  }
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected a failure')
}

describe('trust in the test CA', () => {
  it('reaches forked workers through NODE_EXTRA_CA_CERTS, so no `ca` option is needed', async () => {
    expect(process.env.NODE_EXTRA_CA_CERTS).toBe(inject('tls').caPath)
    const s = await sink({ port: 465 })
    const authorized = await new Promise<boolean>((resolve, reject) => {
      const socket = tls.connect({ host: s.host, port: 465 }, () => {
        resolve(socket.authorized)
        socket.destroy()
      })
      socket.on('error', reject)
    })
    expect(authorized).toBe(true)
    const options = smtpTransportOptions(s.login, { address: s.host, servername: undefined })
    expect(options.tls).not.toHaveProperty('ca')
  })
})

describe('smtpTransportOptions', () => {
  const login: SmtpLogin = { host: 'smtp.example.com', port: 587, username: 'u', password: 'p' }
  const resolved = { address: '93.184.216.34', servername: 'smtp.example.com' }

  it('connects to the checked address, verifies the original name, and never falls back to clear text', () => {
    expect(smtpTransportOptions(login, resolved)).toEqual({
      host: '93.184.216.34',
      port: 587,
      secure: false,
      requireTLS: true,
      tls: { servername: 'smtp.example.com', rejectUnauthorized: true, minVersion: 'TLSv1.2' },
      auth: { user: 'u', pass: 'p' },
      disableFileAccess: true,
      disableUrlAccess: true,
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 30_000,
      logger: false,
    })
  })

  it('uses implicit TLS on 465 and pools when asked', () => {
    const options = smtpTransportOptions({ ...login, port: 465 }, resolved, { pool: true, idleMs: 10_000 })
    expect(options).toMatchObject({
      port: 465,
      secure: true,
      requireTLS: false,
      pool: true,
      maxConnections: 5,
      // Ended with QUIT when idle this long, before the socket timeout could end it without.
      idleTimeout: 10_000,
      // nodemailer ends a session at its message cap without QUIT: there is none.
      maxMessages: Number.POSITIVE_INFINITY,
    })
    expect(smtpTransportOptions(login, resolved)).not.toHaveProperty('pool')
  })

  it('leaves servername out for an IP literal, so the certificate is checked against the IP', () => {
    const options = smtpTransportOptions(login, { address: '93.184.216.34', servername: undefined })
    expect(options.tls).toEqual({ rejectUnauthorized: true, minVersion: 'TLSv1.2' })
  })
})

describe('verifySmtpLogin against real servers', () => {
  it.each([465, 587, 2525] as const)('succeeds on port %i', async (port) => {
    const s = await sink({ port })
    await expect(verifySmtpLogin(s.login, true)).resolves.toBeUndefined()
    expect(s.authAttempts).toBe(1)
  })

  it('refuses a loopback server unless private hosts are allowed, before connecting', async () => {
    const s = await sink({ port: 587 })
    await expect(verifySmtpLogin(s.login, false)).rejects.toThrow(SmtpHostError)
    expect(s.authAttempts).toBe(0)
  })

  it.each([465, 587] as const)('reports a wrong password on %i with the server reply', async (port) => {
    const s = await sink({ port })
    const error = await failure(verifySmtpLogin({ ...s.login, password: 'wrong-password-123' }, true))
    expect(error).toBeInstanceOf(SmtpLoginError)
    const loginError = error as SmtpLoginError
    expect(loginError.message).toBe('SMTP login failed: 535 5.7.8 Authentication credentials invalid')
    expect(loginError.responseCode).toBe(535)
    expect(loginError.message).not.toContain('wrong-password-123')
    expect(isAuthFailure(loginError.cause)).toBe(true)
    expect(kindOf(loginError.cause)).toBe('unreachable')
  })

  it('refuses a 587 server that does not offer STARTTLS: no login, no message in clear text', async () => {
    const s = await sink({ port: 587, offerStartTls: false })
    const error = (await failure(verifySmtpLogin(s.login, true))) as SmtpLoginError
    expect(error).toBeInstanceOf(SmtpLoginError)
    expect(error.message).toMatch(/^SMTP login failed: STARTTLS refused: 5\d\d /)
    const sendError = await failure(send(s.login))
    expect(kindOf(sendError)).toBe('unreachable')
    expect(s.authAttempts).toBe(0)
    expect(s.messages).toHaveLength(0)
  })

  it.each([465, 587] as const)('refuses a certificate the CA did not sign (port %i)', async (port) => {
    const s = await sink({
      port,
      tls: await makeCertificate({ dnsNames: ['smtp.test'], ips: ['127.0.0.1'] }),
    })
    const error = (await failure(verifySmtpLogin(s.login, true))) as SmtpLoginError
    expect(error).toBeInstanceOf(SmtpLoginError)
    expect(error.message).toBe('SMTP login failed: TLS failed: self-signed certificate')
    expect(s.authAttempts).toBe(0)
  })
})

describe('certificate identity is checked against the host the owner gave', () => {
  it.each([465, 587] as const)('port %i: the name, not the address connected to', async (port) => {
    const s = await sink({ port })
    await expect(send(s.login, 'smtp.test')).resolves.toMatchObject({ accepted: ['someone@example.com'] })
    const error = await failure(send(s.login, 'not-in-the-cert.example'))
    expect(String(error)).toMatch(/not-in-the-cert\.example/)
    expect(kindOf(error)).toBe('unreachable')
    expect(s.messages).toHaveLength(1)
  })

  it.each([465, 587] as const)('port %i: the IP when the host is an IP literal', async (port) => {
    const { caKey, caPem } = inject('tls')
    // CA-signed, but for a name only: connecting by IP must fail although the chain is fine.
    const s = await sink({
      port,
      tls: await makeCertificate({ dnsNames: ['smtp.test'] }, { key: caKey, cert: caPem }),
    })
    const error = (await failure(verifySmtpLogin(s.login, true))) as SmtpLoginError
    expect(error.message).toBe(
      `SMTP login failed: TLS failed: Hostname/IP does not match certificate's altnames: IP: ${s.host} is not in the cert's list`,
    )
    await expect(send(s.login, 'smtp.test')).resolves.toMatchObject({ accepted: ['someone@example.com'] })
  })
})

describe('what a send makes of real replies', () => {
  it('delivers a message the sink can read back', async () => {
    const s = await sink({ port: 2525 })
    const info = await send(s.login, undefined, 'Reader <reader@example.com>')
    const [message] = await s.waitForMessages(1)
    expect(message?.envelope).toEqual({ from: 'sender@example.com', to: ['reader@example.com'] })
    expect(message?.headers.get('subject')).toBe('Hello')
    expect(message?.headers.get('message-id')).toBe(info.messageId)
    expect(message?.raw).toContain('Hi there')
  })

  it('451 at DATA is push-back', async () => {
    const s = await sink({
      port: 587,
      behaviour: { rejectData: { code: 451, message: '4.7.1 Try again later' } },
    })
    const error = await failure(send(s.login))
    expect(kindOf(error)).toBe('pushback')
    expect(smtpReason(error)).toBe('451 4.7.1 Try again later')
    expect(isAuthFailure(error)).toBe(false)
  })

  it('550 5.1.1 at RCPT is a rejection', async () => {
    const s = await sink({ port: 465, behaviour: { rejectRecipients: ['Nobody@Example.com'] } })
    const error = await failure(send(s.login, undefined, 'nobody@example.com'))
    expect(kindOf(error)).toBe('rejected')
    expect(smtpReason(error)).toBe('550 5.1.1 <nobody@example.com>: User unknown')
    expect(s.messages).toHaveLength(0)
  })

  it.each([
    [554, '5.2.0 STOREDRV.Submission.Exception:SubmissionQuotaExceededException; Failed to process message'],
    [550, '5.4.5 Daily user sending quota exceeded'],
    [454, 'Throttling failure: Daily message quota exceeded'],
  ])('a provider quota reply %i is push-back', async (code, message) => {
    const s = await sink({ port: 2525, behaviour: { rejectData: { code, message } } })
    const error = await failure(send(s.login))
    expect(kindOf(error)).toBe('pushback')
    expect(smtpReason(error)).toBe(`${code} ${message}`)
  })

  it('421 once the sink throttles is push-back, on a pooled and on a fresh connection', async () => {
    const s = await sink({ port: 587, behaviour: { throttleAfter: 1 } })
    // One connection, so the second message starts on the session that sent the first.
    const options = smtpTransportOptions(
      s.login,
      { address: s.host, servername: undefined },
      {
        pool: true,
        idleMs: 10_000,
      },
    )
    const pool = nodemailer.createTransport({ ...options, maxConnections: 1 })
    try {
      const mail = { from: 'sender@example.com', to: 'a@example.com', subject: 'x', text: 'y' }
      await pool.sendMail(mail)
      const midSession = await failure(pool.sendMail(mail))
      expect(kindOf(midSession)).toBe('pushback')
      expect(smtpReason(midSession)).toBe('421 4.7.0 Too many messages, slow down')
      // nodemailer's pool answers a 421 on a reused connection by retrying once on a new one,
      // where the greeting carries the 421 we see.
      expect(s.connections).toBe(2)
    } finally {
      pool.close()
    }
    const atConnect = await failure(send(s.login))
    expect(kindOf(atConnect)).toBe('pushback')
    expect(smtpReason(atConnect)).toMatch(/^421 /)
  })

  it('a command line too long for the server refuses this message, it is not push-back', async () => {
    const s = await sink({ port: 2525 })
    const to = `${'a'.repeat(20_000)}@example.com`
    const error = await failure(send(s.login, undefined, to))
    expect(smtpReason(error)).toMatch(/^421 .*line too long/i)
    expect(kindOf(error)).toBe('rejected')
    const outcome = outcomeOfError([to], error)
    expect(outcome.pushback).toBeUndefined()
    expect(outcome.unreachable).toBeUndefined()
    expect(outcome.recipients).toEqual([
      { address: to, status: 'refused', reply: expect.stringMatching(/line too long/i) },
    ])
    for (const response of ['421 Error: Command line too long', '500 5.5.2 Line too long']) {
      const literal = Object.assign(new Error(response), {
        code: 'EENVELOPE',
        response,
        responseCode: Number(response.slice(0, 3)),
        command: 'RCPT TO',
      })
      expect(kindOf(literal)).toBe('rejected')
      expect(outcomeOfError(['x@example.com'], literal).pushback).toBeUndefined()
    }
  })

  it('waits for a slow DATA reply', async () => {
    const s = await sink({ port: 587, behaviour: { dataDelayMs: 300 } })
    const started = Date.now()
    await send(s.login)
    expect(Date.now() - started).toBeGreaterThanOrEqual(290)
    s.setBehaviour({ dataDelayMs: 0 })
    await send(s.login)
    expect(s.messages).toHaveLength(2)
  })

  it('a server that is gone is unreachable', async () => {
    const s = await sink({ port: 2525 })
    await s.close()
    const error = await failure(send(s.login))
    expect(kindOf(error)).toBe('unreachable')
    expect(smtpReason(error)).toMatch(/ECONNREFUSED/)
  })
})

describe('reading an SMTP error', () => {
  const reply = (code: string, response: string, extra: Record<string, unknown> = {}) =>
    Object.assign(new Error(`failed: ${response}`), {
      code,
      response,
      responseCode: Number(response.slice(0, 3)),
      ...extra,
    })

  it('tells authentication failures apart', () => {
    expect(isAuthFailure(reply('EAUTH', '535 5.7.8 Authentication credentials invalid'))).toBe(true)
    expect(
      isAuthFailure(Object.assign(new Error('Missing credentials for "PLAIN"'), { code: 'EAUTH' })),
    ).toBe(true)
    expect(isAuthFailure(reply('EAUTH', '454 4.7.0 Temporary authentication failure'))).toBe(true)
    expect(isAuthFailure(reply('EENVELOPE', '550 5.1.1 User unknown'))).toBe(false)
  })

  it('smtpReason gives the reply on one line, or the error message', () => {
    expect(
      smtpReason(reply('EAUTH', '534-5.7.9 Application-specific password required.\r\n534 5.7.9 Learn more')),
    ).toBe('534 5.7.9 Application-specific password required. Learn more')
    expect(smtpReason(new Error('connect ECONNREFUSED 1.2.3.4:587'))).toBe('connect ECONNREFUSED 1.2.3.4:587')
    expect(smtpReason(reply('ETLS', '502 5.5.1 Unrecognized command'))).toBe(
      'STARTTLS refused: 502 5.5.1 Unrecognized command',
    )
  })
})
