import { beforeAll, describe, expect, it } from 'vitest'
import {
  addConnection,
  type ConnectionView,
  deleteConnection,
  disableConnection,
  listConnections,
  pauseConnection,
} from '../../src/connections/connections.ts'
import { createKey } from '../../src/keys/keys.ts'
import { seedAccount, useTestApp } from '../support/app.ts'
import { humanText } from '../support/matchers.ts'
import type { ReceivedMessage, SmtpSink } from '../support/smtp-sink.ts'

// Contract: POST /send — which connection a send goes through (docs/decisions.md, "Connection selection"),
// the three SMTP ports, and the 401/403 answers when no usable connection can be chosen.

const app = useTestApp()
let s465: SmtpSink
let s587: SmtpSink
let s2525: SmtpSink

beforeAll(async () => {
  ;[s465, s587, s2525] = await Promise.all([
    app.sink({ port: 465 }),
    app.sink({ port: 587 }),
    app.sink({ port: 2525 }),
  ])
})

let seq = 0
/** A sending address no other connection of this file uses. */
function address(label: string) {
  return `${label}${++seq}@${label}-${seq}.example`
}

function message(extra: Record<string, unknown> = {}) {
  return { to: 'ada@example.com', subject: `Selection ${++seq}`, text_body: 'Hello', ...extra }
}

/** Sends and reports which sinks received what. */
async function send(key: string, body: Record<string, unknown>) {
  const before = app.sinks.map((s) => s.messages.length)
  const res = await app.request('/send', { method: 'POST', key, body })
  const json = await res.json()
  const received = app.sinks.map((s, i) => s.messages.slice(before[i]))
  return { status: res.status, json, received }
}

/** Asserts a 200 whose message reached `sink` alone, sent from `from`. */
async function expectDelivered(key: string, body: Record<string, unknown>, sink: SmtpSink, from: string) {
  const { status, json, received } = await send(key, body)
  expect(status, JSON.stringify(json)).toBe(200)
  expect(json).toEqual({
    success: true,
    messageId: expect.any(String),
    outboxId: expect.any(Number),
    from,
    message: humanText,
  })
  const index = app.sinks.indexOf(sink)
  expect(received.map((messages) => messages.length)).toEqual(app.sinks.map((_, i) => (i === index ? 1 : 0)))
  const got = received[index]?.[0] as ReceivedMessage
  expect(got.envelope.from).toBe(from)
  expect(got.headers.get('from')).toContain(from)
  return got
}

/** Asserts a 403 with exactly {code, message} and that no sink received anything. */
async function expectRefused(key: string, body: Record<string, unknown>, code: string, status = 403) {
  const res = await send(key, body)
  expect(res.status, JSON.stringify(res.json)).toBe(status)
  expect(res.json).toEqual({ code, message: humanText })
  for (const messages of res.received) expect(messages).toEqual([])
}

/** A Pro account with one connection per entry (the first is the default) and an unscoped key. */
async function proAccount(...entries: Array<{ sink: SmtpSink; from: string }>) {
  const [first, ...rest] = entries
  if (!first) throw new Error('at least one connection')
  const seeded = await seedAccount(app, {
    plan: 'pro',
    connection: { ...first.sink.login, from: first.from, rate: 6000 },
  })
  const connections: ConnectionView[] = [seeded.connection as ConnectionView]
  for (const entry of rest) {
    connections.push(
      await addConnection(app.services, {
        accountId: seeded.account.id,
        ...entry.sink.login,
        from: entry.from,
        rate: 6000,
      }),
    )
  }
  return { ...seeded, connections }
}

/** A Pro account whose default connection goes to s465 from `alpha`, its second to s587 from `beta`. */
async function twoConnections() {
  const alpha = address('alpha')
  const beta = address('beta')
  return { alpha, beta, ...(await proAccount({ sink: s465, from: alpha }, { sink: s587, from: beta })) }
}

async function scopedKey(accountId: number, connectionId: number) {
  const created = await createKey(app.services.sql, { accountId, name: 'scoped', connectionId })
  return created.key
}

describe('ports', () => {
  it.each([
    [465, () => s465],
    [587, () => s587],
    [2525, () => s2525],
  ] as const)('delivers through a connection on port %i', async (port, sinkOf) => {
    const sink = sinkOf()
    expect(sink.port).toBe(port)
    const from = address(`port${port}-`)
    const { key } = await seedAccount(app, { plan: 'free', connection: { ...sink.login, from } })
    const got = await expectDelivered(key, message({ to: 'grace@example.com' }), sink, from)
    expect(got.envelope.to).toEqual(['grace@example.com'])
  })
})

describe('choosing the connection with `from`', () => {
  it('selects the connection whose address matches `from`, case-insensitively', async () => {
    const { key, alpha, beta } = await twoConnections()
    await expectDelivered(key, message({ from: beta.toUpperCase() }), s587, beta)
    await expectDelivered(key, message({ from: alpha.replace(/^a/, 'A') }), s465, alpha)
    await expectDelivered(key, message({ from: beta }), s587, beta)
  })

  it('without `from` uses the default connection (the first created)', async () => {
    const { key, alpha } = await twoConnections()
    await expectDelivered(key, message(), s465, alpha)
  })

  it('`from` matching no connection → 403 CONNECTION_NOT_FOUND', async () => {
    const alpha = address('alpha')
    const { key } = await proAccount({ sink: s465, from: alpha }, { sink: s587, from: address('beta') })
    await expectRefused(key, message({ from: address('stranger') }), 'CONNECTION_NOT_FOUND')
    // Same local part, other domain: still not a match.
    await expectRefused(key, message({ from: alpha.replace('.example', '.test') }), 'CONNECTION_NOT_FOUND')
  })

  it('an account with no connection → 403 NO_CONNECTION without `from`, CONNECTION_NOT_FOUND with it', async () => {
    const { key } = await seedAccount(app, { plan: 'pro' })
    await expectRefused(key, message(), 'NO_CONNECTION')
    await expectRefused(key, message({ from: address('nobody') }), 'CONNECTION_NOT_FOUND')
  })

  it('`from` naming another account’s connection → 403 CONNECTION_NOT_FOUND', async () => {
    const theirs = address('theirs')
    await proAccount({ sink: s465, from: theirs })
    const { key } = await proAccount({ sink: s587, from: address('mine') })
    await expectRefused(key, message({ from: theirs }), 'CONNECTION_NOT_FOUND')
  })

  it('`from` naming a disabled connection → 403 CONNECTION_NOT_FOUND; enabled again, it sends', async () => {
    const { key, connections, alpha, beta } = await twoConnections()
    await disableConnection(app.services.sql, connections[1]?.id as number, true)
    await expectRefused(key, message({ from: beta }), 'CONNECTION_NOT_FOUND')
    await expectDelivered(key, message({ from: alpha }), s465, alpha)
    await disableConnection(app.services.sql, connections[1]?.id as number, false)
    await expectDelivered(key, message({ from: beta }), s587, beta)
  })

  it('`from` naming a paused connection → 403 CONNECTION_NOT_FOUND', async () => {
    const { key, connections, alpha, beta } = await twoConnections()
    await pauseConnection(app.services.sql, connections[1]?.id as number, 15)
    await expectRefused(key, message({ from: beta }), 'CONNECTION_NOT_FOUND')
    await expectRefused(key, message({ from: beta.toUpperCase() }), 'CONNECTION_NOT_FOUND')
    await expectDelivered(key, message({ from: alpha }), s465, alpha)
  })

  it('default connection disabled → 403 CONNECTION_NOT_FOUND; another one still sends by `from`', async () => {
    const { key, connections, beta } = await twoConnections()
    await disableConnection(app.services.sql, connections[0]?.id as number, true)
    await expectRefused(key, message(), 'CONNECTION_NOT_FOUND')
    await expectDelivered(key, message({ from: beta }), s587, beta)
  })

  it('default connection paused → 403 CONNECTION_PAUSED; another one still sends by `from`', async () => {
    const { key, connections, beta } = await twoConnections()
    await pauseConnection(app.services.sql, connections[0]?.id as number, 15)
    await expectRefused(key, message(), 'CONNECTION_PAUSED')
    await expectDelivered(key, message({ from: beta }), s587, beta)
  })

  it('a default paused without end (operator pause) → 403 CONNECTION_PAUSED', async () => {
    const alpha = address('alpha')
    const { key, connections } = await proAccount({ sink: s465, from: alpha })
    await pauseConnection(app.services.sql, connections[0]?.id as number)
    await expectRefused(key, message(), 'CONNECTION_PAUSED')
  })
})

describe('keys scoped to one connection', () => {
  async function setup() {
    const account = await twoConnections()
    const betaId = account.connections[1]?.id as number
    const key = await scopedKey(account.account.id, betaId)
    return { ...account, betaId, scoped: key }
  }

  it('without `from` sends through the scoped connection, not the default', async () => {
    const { scoped, beta, key, alpha } = await setup()
    await expectDelivered(scoped, message(), s587, beta)
    // The account's unscoped key still gets the default.
    await expectDelivered(key, message(), s465, alpha)
  })

  it('with `from` of another connection → 403 CONNECTION_SCOPE_MISMATCH', async () => {
    const { scoped, alpha } = await setup()
    await expectRefused(scoped, message({ from: alpha }), 'CONNECTION_SCOPE_MISMATCH')
  })

  it('with `from` matching no connection at all → 403 CONNECTION_SCOPE_MISMATCH', async () => {
    const { scoped } = await setup()
    await expectRefused(scoped, message({ from: address('stranger') }), 'CONNECTION_SCOPE_MISMATCH')
  })

  it('with its own address in `from`, in another case → 200', async () => {
    const { scoped, beta } = await setup()
    await expectDelivered(scoped, message({ from: beta.toUpperCase() }), s587, beta)
  })

  it('whose connection is paused → 403 CONNECTION_PAUSED', async () => {
    const { scoped, betaId } = await setup()
    await pauseConnection(app.services.sql, betaId, 15)
    await expectRefused(scoped, message(), 'CONNECTION_PAUSED')
  })

  it('whose connection is disabled → 403 CONNECTION_NOT_FOUND', async () => {
    const { scoped, betaId } = await setup()
    await disableConnection(app.services.sql, betaId, true)
    await expectRefused(scoped, message(), 'CONNECTION_NOT_FOUND')
  })

  it('scoped to a deleted connection → 401 Invalid or expired API token', async () => {
    const { scoped, betaId, key, alpha } = await setup()
    await deleteConnection(app.services.sql, betaId)
    const res = await send(scoped, message())
    expect(res.status).toBe(401)
    expect(res.json).toEqual({ error: 'Invalid or expired API token' })
    for (const messages of res.received) expect(messages).toEqual([])
    // Even with `from` naming a connection that still exists.
    const withFrom = await send(scoped, message({ from: alpha }))
    expect(withFrom.status).toBe(401)
    expect(withFrom.json).toEqual({ error: 'Invalid or expired API token' })
    // The account itself still sends.
    await expectDelivered(key, message(), s465, alpha)
  })
})

describe('the default connection after a delete', () => {
  it('the oldest remaining connection becomes the default and a send without `from` goes there', async () => {
    const alpha = address('alpha')
    const beta = address('beta')
    const gamma = address('gamma')
    const { key, account, connections } = await proAccount(
      { sink: s465, from: alpha },
      { sink: s587, from: beta },
      { sink: s2525, from: gamma },
    )
    await expectDelivered(key, message(), s465, alpha)
    await deleteConnection(app.services.sql, connections[0]?.id as number)
    await expectDelivered(key, message(), s587, beta)
    const listed = await listConnections(app.services.sql, account.id)
    expect(listed.map((c) => [c.from, c.is_default])).toEqual([
      [beta, true],
      [gamma, false],
    ])
    await expectRefused(key, message({ from: alpha }), 'CONNECTION_NOT_FOUND')
  })

  it('deleting a connection that is not the default keeps the default', async () => {
    const { key, connections, alpha } = await twoConnections()
    await deleteConnection(app.services.sql, connections[1]?.id as number)
    await expectDelivered(key, message(), s465, alpha)
  })

  it('deleting the last connection → 403 NO_CONNECTION', async () => {
    const alpha = address('alpha')
    const { key, connections } = await proAccount({ sink: s465, from: alpha })
    await deleteConnection(app.services.sql, connections[0]?.id as number)
    await expectRefused(key, message(), 'NO_CONNECTION')
  })
})
