import os from 'node:os'
import { describe, expect, it } from 'vitest'
import { revokeKey } from '../../src/keys/keys.ts'
import { RELAY_AUTH_LIMIT } from '../../src/relay/auth.ts'
import { seedAccount, useTestApp } from '../support/app.ts'
import { plainAuth, rawSession } from './raw-session.ts'
import { type Mode, refusal, relayClient, useRelay } from './relay-fixture.ts'

const app = useTestApp()
const fixture = useRelay(app)

async function proKey() {
  return (await seedAccount(app, { plan: 'pro' })).key
}

async function authFailures(reason: string): Promise<number> {
  const metric = await app.services.metrics.registry
    .getSingleMetric('mailroom_relay_auth_failures_total')
    ?.get()
  return metric?.values.find((v) => v.labels.reason === reason)?.value ?? 0
}

describe('AUTH on the SMTP relay: the username is free, the password is an API key', () => {
  it.each([
    ['starttls', 'PLAIN'],
    ['starttls', 'LOGIN'],
    ['implicit', 'PLAIN'],
    ['implicit', 'LOGIN'],
  ] as [Mode, 'PLAIN' | 'LOGIN'][])('logs in over %s with AUTH %s', async (mode, method) => {
    const key = await proKey()
    await expect(relayClient(fixture.relay, key, { mode, method }).verify()).resolves.toBe(true)
  })

  it('answers 535 5.7.8 to a wrong key, a revoked key and an expired key, and counts each', async () => {
    const { key, keyId } = await seedAccount(app, { plan: 'pro' })
    const expired = await seedAccount(app, { plan: 'pro' })
    await app.services
      .sql`update api_keys set expires_at = mailroom_now() - interval '1 minute' where id = ${expired.keyId}`
    const before = await authFailures('invalid_key')
    const wrong = await refusal(
      relayClient(fixture.relay, `${key}x`, { localAddress: '127.0.0.31' }).verify(),
    )
    await revokeKey(app.services.sql, keyId)
    const revoked = await refusal(relayClient(fixture.relay, key, { localAddress: '127.0.0.31' }).verify())
    const lapsed = await refusal(
      relayClient(fixture.relay, expired.key, { localAddress: '127.0.0.31' }).verify(),
    )
    for (const reply of [wrong, revoked, lapsed]) {
      expect(reply.responseCode).toBe(535)
      expect(reply.response).toMatch(/^535 5\.7\.8 /)
    }
    expect(await authFailures('invalid_key')).toBe(before + 3)
  })

  it('throttles a client address after repeated failures, even its right key, and no other address', async () => {
    const key = await proKey()
    const client = { localAddress: '127.0.0.32', method: 'PLAIN' as const }
    for (let i = 0; i < RELAY_AUTH_LIMIT.attempts; i++) {
      expect((await refusal(relayClient(fixture.relay, 'mr_wrong', client).verify())).responseCode).toBe(535)
    }
    const throttled = await refusal(relayClient(fixture.relay, key, client).verify())
    expect(throttled.response).toMatch(
      /^454 4\.7\.0 Too many failed AUTH attempts from this address; try again in \d+ minutes?$/,
    )
    await expect(relayClient(fixture.relay, key, { localAddress: '127.0.0.33' }).verify()).resolves.toBe(true)
  })

  it('a right key is never counted: a busy client that authenticates often is never throttled', async () => {
    const key = await proKey()
    for (let i = 0; i <= RELAY_AUTH_LIMIT.attempts; i++) {
      await expect(relayClient(fixture.relay, key, { localAddress: '127.0.0.34' }).verify()).resolves.toBe(
        true,
      )
    }
  })

  it('accepts the right key from more sessions of one address at once than the failure limit, and throttles none of them', async () => {
    const key = await proKey()
    const client = { localAddress: '127.0.0.35', clearText: true }
    const sessions = Array.from({ length: 2 * RELAY_AUTH_LIMIT.attempts }, () =>
      relayClient(fixture.relay, key, client).verify(),
    )
    expect(await Promise.allSettled(sessions)).toEqual(
      sessions.map(() => ({ status: 'fulfilled', value: true })),
    )
    await expect(relayClient(fixture.relay, key, client).verify()).resolves.toBe(true)
  })

  it('lets a client on this host AUTH without TLS', async () => {
    const key = await proKey()
    await expect(relayClient(fixture.relay, key, { clearText: true }).verify()).resolves.toBe(true)
  })
})

const outside = Object.values(os.networkInterfaces())
  .flat()
  .find((i) => i && i.family === 'IPv4' && !i.internal)?.address

describe.skipIf(!outside)('AUTH from another host', () => {
  const remote = useRelay(app, { host: outside, securePort: null })

  it('is neither offered nor taken before STARTTLS, and MAIL FROM asks for it', async () => {
    const key = await proKey()
    const session = rawSession(outside ?? '', remote.relay.ports.smtp ?? 0)
    expect(await session.greeting).toMatch(/^220 /)
    const ehlo = await session.command('EHLO app.example')
    expect(ehlo).toContain('STARTTLS')
    expect(ehlo).not.toMatch(/AUTH/)
    expect(await session.command(plainAuth(key))).toMatch(/^5\d\d /)
    expect(await session.command('MAIL FROM:<someone@example.com>')).toMatch(/^530 5\.7\.0 /)
    session.end()
  })

  it('is offered and taken once the session is encrypted', async () => {
    const key = await proKey()
    const client = relayClient(remote.relay, key, { host: outside })
    await expect(client.verify()).resolves.toBe(true)
  })
})
