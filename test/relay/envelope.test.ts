import { describe, expect, it } from 'vitest'
import { addConnection, disableConnection } from '../../src/connections/connections.ts'
import { createKey, revokeKey } from '../../src/keys/keys.ts'
import { suppressManually } from '../../src/suppressions/suppressions.ts'
import { useTestApp } from '../support/app.ts'
import { keyIdOf, senderAddress, startSender } from '../support/sending.ts'
import { plainAuth, rawSession } from './raw-session.ts'
import { plainMessage, refusal, relayClient, useRelay } from './relay-fixture.ts'

const app = useTestApp()
const fixture = useRelay(app)

describe('MAIL FROM on the SMTP relay chooses the connection as `from` does', () => {
  it('refuses a key scoped to another connection with 550 5.7.1, naming the scope mismatch', async () => {
    const s = await startSender(app, 'scoped-from', { plan: 'pro' })
    const other = senderAddress('elsewhere')
    const sink = await app.sink({ port: 2525 })
    await addConnection(app.services, { accountId: s.accountId, ...sink.login, from: other })
    const scoped = await createKey(app.services.sql, {
      accountId: s.accountId,
      name: 'scoped',
      connectionId: s.connectionId,
    })
    const reply = await refusal(
      relayClient(fixture.relay, scoped.key).sendMail(plainMessage(other, ['a@example.com'])),
    )
    expect(reply.response).toBe(`550 5.7.1 This API key may only send from ${s.from}, not ${other}`)
  })

  it('refuses an address that is no connection of the account with 550 5.7.1', async () => {
    const s = await startSender(app, 'unknown-from', { plan: 'pro' })
    const stranger = senderAddress('stranger')
    const reply = await refusal(
      relayClient(fixture.relay, s.key).sendMail(plainMessage(stranger, ['a@example.com'])),
    )
    expect(reply.response).toBe(
      `550 5.7.1 ${stranger} is not the address of one of this account's connections`,
    )
  })

  it('refuses a disabled connection with 550 5.7.1', async () => {
    const s = await startSender(app, 'disabled-from', { plan: 'pro' })
    await disableConnection(app.services.sql, s.connectionId, true)
    const reply = await refusal(
      relayClient(fixture.relay, s.key).sendMail(plainMessage(s.from, ['a@example.com'])),
    )
    expect(reply.response).toBe(`550 5.7.1 The connection for ${s.from} is disabled`)
  })

  it('refuses a Free account with 550 5.7.0: the relay queues, which is Pro', async () => {
    const s = await startSender(app, 'free-from', { plan: 'free' })
    const reply = await refusal(
      relayClient(fixture.relay, s.key).sendMail(plainMessage(s.from, ['a@example.com'])),
    )
    expect(reply.response).toMatch(
      /^550 5\.7\.0 This operation needs the Pro plan; the account is on the free plan/,
    )
    expect(s.sink.messages).toHaveLength(0)
  })
})

/** A session on the STARTTLS port in clear text (this host may AUTH so), up to an accepted MAIL FROM. */
async function transaction(key: string, from: string) {
  const session = rawSession('127.0.0.1', fixture.relay.ports.smtp ?? 0)
  await session.greeting
  await session.command('EHLO app.example')
  expect(await session.command(plainAuth(key))).toMatch(/^235 /)
  expect(await session.command(`MAIL FROM:<${from}>`)).toMatch(/^250 /)
  return session
}

describe('a session outlives no revocation', () => {
  it('refuses the next MAIL FROM with 535 5.7.8 once its key is revoked', async () => {
    const s = await startSender(app, 'revoked-mid-session', { plan: 'pro' })
    const session = await transaction(s.key, s.from)
    expect(await session.command('RSET')).toMatch(/^250 /)
    await revokeKey(app.services.sql, await keyIdOf(app, s.accountId))
    expect(await session.command(`MAIL FROM:<${s.from}>`)).toBe(
      '535 5.7.8 The API key is no longer valid: it was revoked or has expired\r\n',
    )
    session.end()
  })
})

describe('RCPT TO on the SMTP relay', () => {
  it('refuses a recipient suppressed for all mail with 550 5.7.1 and its reason, and takes the others', async () => {
    const s = await startSender(app, 'suppressed-rcpt', { plan: 'pro' })
    await suppressManually(app.services.sql, s.accountId, { emails: ['Gone@Example.com'] }, 'api')
    await suppressManually(
      app.services.sql,
      s.accountId,
      { emails: ['news@example.com'], scope: 'marketing' },
      'api',
    )
    const session = await transaction(s.key, s.from)
    expect(await session.command('RCPT TO:<gone@example.com>')).toBe(
      '550 5.7.1 gone@example.com is suppressed (manual)\r\n',
    )
    // Marketing suppressions do not apply to transactional mail.
    expect(await session.command('RCPT TO:<news@example.com>')).toMatch(/^250 /)
    expect(await session.command('RCPT TO:<fine@example.com>')).toMatch(/^250 /)
    session.end()
  })

  it('takes 100 recipients a message and answers the 101st 452 4.5.3', async () => {
    const s = await startSender(app, 'many-rcpt', { plan: 'pro' })
    const session = await transaction(s.key, s.from)
    for (let i = 1; i <= 100; i++)
      expect(await session.command(`RCPT TO:<r${i}@example.com>`)).toMatch(/^250 /)
    expect(await session.command('RCPT TO:<r101@example.com>')).toBe(
      '452 4.5.3 Too many recipients: at most 100 a message\r\n',
    )
    session.end()
  })
})
