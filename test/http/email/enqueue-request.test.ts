/**
 * Contract tests for the request side of POST /enqueue: the Free refusal (before anything else),
 * authentication, validation as for /send, the response shape, and the contract's connection
 * selection for queued mail (a paused connection is accepted and the mail waits).
 */
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  addConnection,
  type ConnectionView,
  disableConnection,
  pauseConnection,
  resumeConnection,
} from '../../../src/connections/connections.ts'
import { createKey } from '../../../src/keys/keys.ts'
import { type SeededAccount, seedAccount, useTestApp } from '../../support/app.ts'
import { humanText, validationBody } from '../../support/matchers.ts'
import {
  email,
  ISO_MILLIS,
  outboxRecord,
  outboxStatusCounts,
  postEnqueue,
  startTestWorker,
  waitForOutboxStatus,
} from '../../support/queue.ts'
import { type Reply, senderAddress, startSink } from '../../support/sending.ts'
import type { SmtpSink } from '../../support/smtp-sink.ts'

const app = useTestApp()
let sink: SmtpSink

beforeAll(async () => {
  sink = await startSink(app)
})

/** A fresh account whose connections all log in to the file's sink; the first is the default. */
async function account(plan: 'free' | 'pro', connections = 1) {
  const seeded = await seedAccount(app, {
    plan,
    ...(connections > 0 ? { connection: { ...sink.login, from: senderAddress('enq'), rate: 6000 } } : {}),
  })
  const all: ConnectionView[] = seeded.connection ? [seeded.connection] : []
  for (let i = 1; i < connections; i++) {
    all.push(
      await addConnection(app.services, {
        accountId: seeded.account.id,
        ...sink.login,
        from: senderAddress('enq'),
        rate: 6000,
      }),
    )
  }
  return { ...seeded, connections: all }
}

function connectionAt(seeded: { connections: ConnectionView[] }, i: number): ConnectionView {
  const connection = seeded.connections[i]
  if (!connection) throw new Error(`no connection #${i}`)
  return connection
}

/** A refusal: the status and body, and no outbox record was written for the account. */
async function expectRefused(seeded: SeededAccount, body: unknown, status: number, expected: unknown) {
  const reply = await postEnqueue(app, seeded.key, body)
  expect({ status: reply.status, body: reply.body }).toEqual({ status, body: expected })
  expect(await outboxStatusCounts(app, seeded.account.id)).toEqual({})
}

function accepted(reply: Reply, from: string) {
  expect(reply.status, JSON.stringify(reply.body)).toBe(200)
  expect(reply.body).toEqual({
    success: true,
    message: humanText,
    outboxId: expect.any(Number),
    from,
    queuedAt: expect.stringMatching(ISO_MILLIS),
  })
  return reply.body.outboxId as number
}

// ------------------------------------------------------------------------------------------------

describe('POST /enqueue on the Free plan', () => {
  const FEATURE_NOT_AVAILABLE = {
    code: 'FEATURE_NOT_AVAILABLE',
    message: humanText,
    details: { feature: 'async_sending', upgradeRequired: true },
  }

  it('answers 403 FEATURE_NOT_AVAILABLE (async_sending, upgradeRequired) and queues nothing', async () => {
    const free = await account('free')
    await expectRefused(free, email(), 403, FEATURE_NOT_AVAILABLE)
  })

  it.each([
    ['missing `to` and `subject`', { text_body: 'x' }],
    ['no body at all', undefined],
    ['11 recipients', email({ to: Array.from({ length: 11 }, (_, i) => `r${i}@example.com`) })],
    ['malformed JSON', '{"to": '],
  ])('refuses before looking at the body: %s from a Free account is still 403', async (_label, body) => {
    const free = await account('free')
    await expectRefused(free, body, 403, FEATURE_NOT_AVAILABLE)
  })

  it('refuses before connection selection: a Free account without a connection gets 403 FEATURE_NOT_AVAILABLE, not NO_CONNECTION', async () => {
    const free = await account('free', 0)
    await expectRefused(free, email(), 403, FEATURE_NOT_AVAILABLE)
  })
})

describe('POST /enqueue: authentication', () => {
  it('without an Authorization header answers 401 with the missing-header body', async () => {
    const res = await app.request('/enqueue', { body: email() })
    expect({ status: res.status, body: await res.json() }).toEqual({
      status: 401,
      body: { error: 'Missing or invalid Authorization header' },
    })
  })

  it('with an unknown key answers 401 Invalid or expired API token', async () => {
    const res = await app.request('/enqueue', {
      key: `mr_${randomBytes(32).toString('base64url')}`,
      body: email(),
    })
    expect({ status: res.status, body: await res.json() }).toEqual({
      status: 401,
      body: { error: 'Invalid or expired API token' },
    })
  })
})

describe('POST /enqueue: validation as for /send', () => {
  let pro: Awaited<ReturnType<typeof account>>
  beforeAll(async () => {
    pro = await account('pro')
  })

  it.each([
    ['missing `to`', { subject: 'Hi', text_body: 'x' }, [{ path: ['to'], code: 'invalid_union' }]],
    [
      'missing `subject`',
      { to: 'ada@example.com', text_body: 'x' },
      [{ path: ['subject'], code: 'invalid_type' }],
    ],
    [
      'neither text_body nor html_body',
      { to: 'ada@example.com', subject: 'Hi' },
      [{ path: [], code: 'custom' }],
    ],
    [
      'an invalid address in cc',
      email({ cc: ['not-an-address'] }),
      [{ path: ['cc', 0], code: 'invalid_format' }],
    ],
  ])('%s → 400 validation body, nothing queued', async (_label, body, issues) => {
    await expectRefused(pro, body, 400, validationBody(issues))
  })

  it('malformed JSON → 400 INVALID_JSON', async () => {
    await expectRefused(pro, '{"to": ', 400, { code: 'INVALID_JSON', message: humanText })
  })

  it('refuses 11 recipients across to, cc and bcc with 400 TOO_MANY_RECIPIENTS', async () => {
    const body = email({
      to: ['t1@example.com', 't2@example.com', 't3@example.com', 't4@example.com'],
      cc: 'c1@example.com, c2@example.com, c3@example.com',
      bcc: ['b1@example.com', 'b2@example.com', 'b3@example.com', 'b4@example.com'],
    })
    const reply = await postEnqueue(app, pro.key, body)
    expect(reply.status).toBe(400)
    expect(reply.body).toEqual({
      code: 'TOO_MANY_RECIPIENTS',
      message: humanText,
      ...(reply.body.details === undefined ? {} : { details: expect.any(Object) }),
    })
    expect(await outboxStatusCounts(app, pro.account.id)).toEqual({})
  })

  it('accepts exactly 10 recipients and records them all', async () => {
    const to = ['t1@example.com', 't2@example.com', 't3@example.com', 't4@example.com']
    const cc = ['c1@example.com', 'c2@example.com', 'c3@example.com']
    const bcc = ['b1@example.com', 'b2@example.com', 'b3@example.com']
    const reply = await postEnqueue(app, pro.key, email({ to, cc: cc.join(', '), bcc }))
    const id = accepted(reply, connectionAt(pro, 0).from)
    const record = await outboxRecord(app, pro.account.id, id)
    expect({ to: record.to, cc: record.cc, bcc: record.bcc }).toEqual({ to, cc, bcc })
  })

  it('validates before choosing a connection: no connection and a bad body is 400, not NO_CONNECTION', async () => {
    const bare = await account('pro', 0)
    await expectRefused(
      bare,
      { to: 'ada@example.com', text_body: 'x' },
      400,
      validationBody([{ path: ['subject'], code: 'invalid_type' }]),
    )
  })
})

describe('POST /enqueue: the response', () => {
  it('is {success, message, outboxId, from, queuedAt} with the connection address and an ISO instant with ms and Z', async () => {
    const pro = await account('pro')
    const before = Date.now()
    const reply = await postEnqueue(app, pro.key, email())
    const after = Date.now()
    const id = accepted(reply, connectionAt(pro, 0).from)
    expect(Number.isInteger(id)).toBe(true)
    const queuedAt = Date.parse(reply.body.queuedAt as string)
    expect(queuedAt).toBeGreaterThanOrEqual(before - 1_000)
    expect(queuedAt).toBeLessThanOrEqual(after + 1_000)
    // The outbox id is the account's record, and it waits in the queue.
    const record = await outboxRecord(app, pro.account.id, id)
    expect(record).toMatchObject({ status: 'queued', from: connectionAt(pro, 0).from, attempts: 0 })
  })

  it('gives each enqueue its own outbox record', async () => {
    const pro = await account('pro')
    const first = await postEnqueue(app, pro.key, email())
    const second = await postEnqueue(app, pro.key, email())
    expect(first.body.outboxId).not.toBe(second.body.outboxId)
    expect(await outboxStatusCounts(app, pro.account.id)).toEqual({ queued: 2 })
  })
})

describe('POST /enqueue: connection selection (paused connections accept the mail)', () => {
  const NOT_FOUND = { code: 'CONNECTION_NOT_FOUND', message: humanText }

  it('a key scoped to one connection with `from` naming another: 403 CONNECTION_SCOPE_MISMATCH', async () => {
    const pro = await account('pro', 2)
    const scoped = await createKey(app.services.sql, {
      accountId: pro.account.id,
      name: 'scoped',
      connectionId: connectionAt(pro, 0).id,
    })
    await expectRefused({ ...pro, key: scoped.key }, email({ from: connectionAt(pro, 1).from }), 403, {
      code: 'CONNECTION_SCOPE_MISMATCH',
      message: humanText,
    })
  })

  it('a key scoped to a connection sends through it whatever the default, `from` in any case', async () => {
    const pro = await account('pro', 2)
    const second = connectionAt(pro, 1)
    const scoped = await createKey(app.services.sql, {
      accountId: pro.account.id,
      name: 'scoped',
      connectionId: second.id,
    })
    accepted(await postEnqueue(app, scoped.key, email()), second.from)
    accepted(await postEnqueue(app, scoped.key, email({ from: second.from.toUpperCase() })), second.from)
  })

  it('`from` matching no connection of the account: 403 CONNECTION_NOT_FOUND', async () => {
    const pro = await account('pro')
    const other = await account('pro')
    await expectRefused(pro, email({ from: 'nobody@example.com' }), 403, NOT_FOUND)
    // Another account's connection is no connection of this one.
    await expectRefused(pro, email({ from: connectionAt(other, 0).from }), 403, NOT_FOUND)
  })

  it('no `from` and no connection at all: 403 NO_CONNECTION', async () => {
    const bare = await account('pro', 0)
    await expectRefused(bare, email(), 403, { code: 'NO_CONNECTION', message: humanText })
  })

  it('a disabled default connection: 403 CONNECTION_NOT_FOUND', async () => {
    const pro = await account('pro')
    await disableConnection(app.services.sql, connectionAt(pro, 0).id, true)
    await expectRefused(pro, email(), 403, NOT_FOUND)
  })

  it('`from` naming a disabled connection: 403 CONNECTION_NOT_FOUND', async () => {
    const pro = await account('pro', 2)
    await disableConnection(app.services.sql, connectionAt(pro, 1).id, true)
    await expectRefused(pro, email({ from: connectionAt(pro, 1).from }), 403, NOT_FOUND)
  })

  it('a disabled scoped connection: 403 CONNECTION_NOT_FOUND', async () => {
    const pro = await account('pro', 2)
    const scoped = await createKey(app.services.sql, {
      accountId: pro.account.id,
      name: 'scoped',
      connectionId: connectionAt(pro, 1).id,
    })
    await disableConnection(app.services.sql, connectionAt(pro, 1).id, true)
    await expectRefused({ ...pro, key: scoped.key }, email(), 403, NOT_FOUND)
  })

  it('`from` naming a paused connection: accepted, queued on that connection', async () => {
    const pro = await account('pro', 2)
    const paused = connectionAt(pro, 1)
    await pauseConnection(app.services.sql, paused.id)
    const id = accepted(await postEnqueue(app, pro.key, email({ from: paused.from })), paused.from)
    const record = await outboxRecord(app, pro.account.id, id)
    expect(record).toMatchObject({ status: 'queued', connection_id: paused.id })
  })

  it('a paused scoped connection: accepted, queued on that connection', async () => {
    const pro = await account('pro', 2)
    const paused = connectionAt(pro, 1)
    const scoped = await createKey(app.services.sql, {
      accountId: pro.account.id,
      name: 'scoped',
      connectionId: paused.id,
    })
    await pauseConnection(app.services.sql, paused.id)
    const id = accepted(await postEnqueue(app, scoped.key, email()), paused.from)
    expect(await outboxRecord(app, pro.account.id, id)).toMatchObject({
      status: 'queued',
      connection_id: paused.id,
    })
  })

  it('`from` is compared case-insensitively; `from` in the answer is the connection address', async () => {
    const pro = await account('pro', 2)
    const second = connectionAt(pro, 1)
    const id = accepted(
      await postEnqueue(app, pro.key, email({ from: second.from.toUpperCase() })),
      second.from,
    )
    expect((await outboxRecord(app, pro.account.id, id)).connection_id).toBe(second.id)
  })

  it('a paused default connection: accepted, nothing sent while paused, delivered once resumed', async () => {
    const pro = await account('pro')
    const connection = connectionAt(pro, 0)
    await pauseConnection(app.services.sql, connection.id)
    const recipient = `paused-default-${Date.now()}@example.com`
    const id = accepted(await postEnqueue(app, pro.key, email({ to: recipient })), connection.from)
    const toRecipient = () => sink.messages.filter((m) => m.envelope.to.includes(recipient))

    const worker = await startTestWorker(app.services)
    try {
      await sleep(1_500)
      expect(toRecipient()).toHaveLength(0)
      expect(await outboxRecord(app, pro.account.id, id)).toMatchObject({ status: 'queued', attempts: 0 })

      await resumeConnection(app.services.sql, connection.id)
      const sent = await waitForOutboxStatus(app, pro.account.id, id, 'sent')
      expect(sent.attempts).toBe(1)
      expect(toRecipient()).toHaveLength(1)
    } finally {
      await worker.stop()
    }
  })
})
