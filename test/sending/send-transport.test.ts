import { execFile } from 'node:child_process'
import net from 'node:net'
import { promisify } from 'node:util'
import { beforeAll, describe, expect, it } from 'vitest'
import { updateConnection } from '../../src/connections/connections.ts'
import { type SeededAccount, seedAccount, TEST_SECRET, useTestApp } from '../support/app.ts'
import { decodeMessage } from '../support/batches.ts'
import { waitFor } from '../support/queue.ts'
import type { SmtpSink } from '../support/smtp-sink.ts'

const run = promisify(execFile)

const app = useTestApp()
let sink: SmtpSink
let owner: SeededAccount

beforeAll(async () => {
  sink = await app.sink({ port: 587 })
  owner = await seedAccount(app, { plan: 'pro', connection: { ...sink.login, rate: 6000 } })
})

function send(body: Record<string, unknown>) {
  return app.request('/send', { key: owner.key, body })
}

/**
 * A TCP proxy on port 465 of a loopback address of its own, in front of an implicit-TLS sink,
 * counting the TLS records of application data its clients send: each is a write of theirs.
 * Armed with `dropOnNextWrite`, it drops the session of the next client that writes, as a server
 * that closed an idle session just as a new message began.
 */
async function recordCountingProxy(target: SmtpSink) {
  let records = 0
  let dropArmed = false
  let drops = 0
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host)
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on('close', () => sockets.delete(socket))
    }
    let pending = Buffer.alloc(0)
    client.on('data', (chunk: Buffer) => {
      if (dropArmed) {
        dropArmed = false
        drops++
        client.destroy()
        return
      }
      pending = Buffer.concat([pending, chunk])
      // A record: content type, version (2 bytes), length (2 bytes), then that many bytes.
      while (pending.length >= 5 && pending.length >= 5 + pending.readUInt16BE(3)) {
        if (pending[0] === 23) records++
        pending = pending.subarray(5 + pending.readUInt16BE(3))
      }
      upstream.write(chunk)
    })
    upstream.pipe(client)
    for (const socket of [client, upstream]) socket.on('error', () => {})
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  for (let n = 201; ; n++) {
    const host = `127.0.0.${n}`
    const listening = await new Promise<boolean>((resolve, reject) => {
      server.once('error', (error: NodeJS.ErrnoException) =>
        error.code === 'EADDRINUSE' && n < 254 ? resolve(false) : reject(error),
      )
      server.listen(465, host, () => resolve(true))
    })
    if (listening) {
      return {
        host,
        records: () => records,
        dropOnNextWrite() {
          dropArmed = true
        },
        drops: () => drops,
        close() {
          for (const socket of sockets) socket.destroy()
          return new Promise((resolve) => server.close(resolve))
        },
      }
    }
  }
}

type Proxy = Awaited<ReturnType<typeof recordCountingProxy>>

describe('a message goes to its session whole', () => {
  /** An account whose connection reaches an implicit-TLS sink through the proxy; both closed after. */
  async function throughProxy(
    test: (context: { tls: SmtpSink; proxy: Proxy; key: string }) => Promise<void>,
  ): Promise<void> {
    const tls = await app.sink({ port: 465 })
    const proxy = await recordCountingProxy(tls)
    try {
      const { key } = await seedAccount(app, {
        plan: 'pro',
        connection: { ...tls.login, host: proxy.host, rate: 6000 },
      })
      await test({ tls, proxy, key })
    } finally {
      await proxy.close()
      await tls.close()
    }
  }

  it('in two TLS records, whatever its parts: the pipelined envelope, then the message with its end of data', () =>
    throughProxy(async ({ tls, proxy, key }) => {
      const body = {
        to: 'whole@example.com',
        subject: 'In one piece',
        text_body: 'Plain words.',
        html_body: '<p>HTML words.</p>',
      }
      // The first opens the pooled session (handshake, EHLO, AUTH); the second reuses it.
      expect((await app.request('/send', { key, body })).status).toBe(200)
      const before = proxy.records()
      expect((await app.request('/send', { key, body })).status).toBe(200)
      expect(proxy.records() - before).toBe(2)
      const [, message] = await tls.waitForMessages(2)
      expect(message?.headers.get('content-type')).toMatch(/^multipart\/alternative/)
      expect(message?.raw).toContain('Plain words.')
      expect(message?.raw).toContain('<p>HTML words.</p>')
    }))

  it('larger than the socket takes at once, and with lines that begin with a dot, arrives whole', () =>
    throughProxy(async ({ tls, key }) => {
      // About 360 KB: more than a socket buffers before it pushes back; every seventh line
      // begins with a dot, which SMTP must stuff.
      const lines = Array.from({ length: 6000 }, (_, i) =>
        `${i % 7 === 0 ? '.' : ''}line ${i} `.padEnd(60, 'x'),
      )
      const text_body = lines.join('\n')
      for (const subject of ['large, first on its session', 'large, on the session again']) {
        const response = await app.request('/send', {
          key,
          body: { to: 'large@example.com', subject, text_body },
        })
        expect(response.status).toBe(200)
      }
      const messages = await tls.waitForMessages(2)
      for (const message of messages) {
        expect(message.headers.get('content-transfer-encoding')).toBe('quoted-printable')
        expect(decodeMessage(message.raw).text).toBe(lines.join('\r\n'))
      }
    }))

  it('on a new session, once, when the server drops the pooled one as the message begins', () =>
    throughProxy(async ({ tls, proxy, key }) => {
      const body = (subject: string) => ({ to: 'again@example.com', subject, text_body: 'Once.' })
      expect((await app.request('/send', { key, body: body('first') })).status).toBe(200)
      proxy.dropOnNextWrite()
      const second = await app.request('/send', { key, body: body('second') })
      expect(second.status).toBe(200)
      expect((await second.json()).success).toBe(true)
      expect(proxy.drops()).toBe(1)
      const messages = await tls.waitForMessages(2)
      expect(messages.map((m) => m.headers.get('subject'))).toEqual(['first', 'second'])
    }))
})

describe('SMTP transports are pooled per connection', () => {
  it('reuses one SMTP session across requests instead of logging in for each', async () => {
    const before = {
      connections: sink.connections,
      logins: sink.authAttempts,
      messages: sink.messages.length,
    }
    for (let i = 0; i < 5; i++) {
      const response = await send({ to: 'pool@example.com', subject: `pooled ${i}`, text_body: 'x' })
      expect(response.status).toBe(200)
    }
    await sink.waitForMessages(before.messages + 5)
    // The pool may open up to two sessions; five fresh logins would mean no reuse.
    expect(sink.authAttempts - before.logins).toBeLessThanOrEqual(2)
    expect(sink.connections - before.connections).toBeLessThanOrEqual(2)
  })

  it('rebuilds the transport when the connection’s login changes', async () => {
    const before = await app.sink({ port: 2525, password: 'first-password' })
    const account = await seedAccount(app, { plan: 'pro', connection: { ...before.login, rate: 6000 } })
    const first = await app.request('/send', {
      key: account.key,
      body: { to: 'a@example.com', subject: 'before', text_body: 'x' },
    })
    expect(first.status).toBe(200)
    await before.close()

    // The server now only takes a new password; a kept transport would still log in with the old one.
    const after = await app.sink({ port: 2525, host: before.host, password: 'second-password' })
    await updateConnection(app.services, account.connection?.id ?? 0, { password: 'second-password' })
    const second = await app.request('/send', {
      key: account.key,
      body: { to: 'a@example.com', subject: 'after', text_body: 'x' },
    })

    expect(second.status).toBe(200)
    expect((await after.waitForMessages(1))[0]?.headers.get('subject')).toBe('after')
    await after.close()
  })
})

describe('SMTP sessions are polite', () => {
  /** Every session `sink` saw has ended; how many of them with QUIT. */
  async function endedSessions(target: SmtpSink): Promise<{ ended: number; quits: number }> {
    await waitFor('every session to end', () => (target.closed === target.connections ? true : undefined))
    return { ended: target.closed, quits: target.quits }
  }

  it('a pool that closes says QUIT in each of its sessions', async () => {
    const own = await app.sink({ port: 465 })
    const account = await seedAccount(app, { plan: 'pro', connection: { ...own.login, rate: 6000 } })
    const sends = Array.from({ length: 4 }, (_, i) =>
      app.request('/send', {
        key: account.key,
        body: { to: 'q@example.com', subject: `quit ${i}`, text_body: 'x' },
      }),
    )
    for (const response of await Promise.all(sends)) expect(response.status).toBe(200)
    await app.services.transports.close()
    const { ended, quits } = await endedSessions(own)
    // The login test of `connection add` and the pool's sessions: each one said goodbye.
    expect(ended).toBeGreaterThanOrEqual(2)
    expect(quits).toBe(ended)
  })

  it('the pool replaced after a login change says QUIT in its sessions too', async () => {
    const own = await app.sink({ port: 2525 })
    const account = await seedAccount(app, { plan: 'pro', connection: { ...own.login, rate: 6000 } })
    const body = { to: 'q@example.com', subject: 'before the change', text_body: 'x' }
    expect((await app.request('/send', { key: account.key, body })).status).toBe(200)
    await updateConnection(app.services, account.connection?.id ?? 0, { password: own.password })
    expect((await app.request('/send', { key: account.key, body })).status).toBe(200)
    await app.services.transports.close()
    const { ended, quits } = await endedSessions(own)
    expect(quits).toBe(ended)
  })

  it('introduces itself with the configured EHLO name (MAILROOM_EHLO_NAME), not an address in brackets', async () => {
    const own = await app.sink({ port: 587 })
    const account = await seedAccount(app, { plan: 'pro', connection: { ...own.login, rate: 6000 } })
    const body = { to: 'e@example.com', subject: 'ehlo', text_body: 'x' }
    expect((await app.request('/send', { key: account.key, body })).status).toBe(200)
    // The login test of `connection add`, then the pooled session: both as the test config says.
    expect(own.ehloNames.length).toBeGreaterThanOrEqual(2)
    expect(new Set(own.ehloNames)).toEqual(new Set([app.services.config.ehloName]))
    expect(app.services.config.ehloName).toBe('mailroom.test')
  })
})

describe('only known fields reach SMTP', () => {
  it('ignores a caller-supplied envelope, raw source and nodemailer-style options', async () => {
    const count = sink.messages.length
    const response = await send({
      to: 'known@example.com',
      subject: 'known fields',
      text_body: 'plain',
      envelope: { from: 'spoof@example.com', to: ['spy@example.com'] },
      raw: 'From: spoof@example.com\r\n\r\nraw',
      replyTo: 'spy@example.com',
      bccHeader: 'spy@example.com',
    })
    expect(response.status).toBe(200)
    const [message] = (await sink.waitForMessages(count + 1)).slice(count)
    expect(message?.envelope).toEqual({ from: owner.connection?.from, to: ['known@example.com'] })
    expect(message?.headers.has('x-evil')).toBe(false)
    expect(message?.headers.has('bcc')).toBe(false)
    expect(message?.headers.has('reply-to')).toBe(false)
    expect(message?.raw).not.toContain('Content-Disposition: attachment')
  })

  it('refuses headers Mailroom sets and attachments that name a file or an address instead of content', async () => {
    const count = sink.messages.length
    const response = await send({
      to: 'known@example.com',
      subject: 'known fields',
      text_body: 'plain',
      headers: { 'X-Fine': '1', Bcc: 'spy@example.com' },
      attachments: [{ path: '/etc/passwd' }, { href: 'http://127.0.0.1:9/secret' }],
    })
    expect(response.status).toBe(400)
    const { error } = (await response.json()) as { error: { issues: { path: unknown[] }[] } }
    expect(error.issues.map((issue) => issue.path)).toEqual([
      ['attachments', 0, 'filename'],
      ['attachments', 0, 'content'],
      ['attachments', 1, 'filename'],
      ['attachments', 1, 'content'],
    ])
    expect(sink.messages).toHaveLength(count)
  })
})

describe('the outbox', () => {
  it('shows every attempted send to the operator, newest first', async () => {
    const account = await seedAccount(app, {
      plan: 'free',
      connection: { ...sink.login, from: 'outbox@example.com' },
    })
    const sent = await app.request('/send', {
      key: account.key,
      body: { to: 'one@example.com', cc: 'two@example.com', subject: 'for the outbox', text_body: 'x' },
    })
    const body = (await sent.json()) as { outboxId: number; messageId: string }

    const { stdout } = await run(
      process.execPath,
      ['bin/mailroom.js', 'outbox', 'list', '--account', String(account.account.id), '--limit', '5'],
      { env: { ...process.env, DATABASE_URL: app.db.url, MAILROOM_SECRET: TEST_SECRET } },
    )
    const records = JSON.parse(stdout) as Record<string, unknown>[]
    expect(records).toEqual([
      expect.objectContaining({
        id: body.outboxId,
        status: 'sent',
        connection_id: account.connection?.id,
        from: 'outbox@example.com',
        to: ['one@example.com'],
        cc: ['two@example.com'],
        bcc: [],
        subject: 'for the outbox',
        message_id: body.messageId,
        error: null,
      }),
    ])
  })
})

describe('a message the server accepted is never recorded as failed', () => {
  it('leaves the attempt in flight, its units used, when recording the success fails', async () => {
    const account = await seedAccount(app, {
      plan: 'free',
      connection: { ...sink.login, from: 'unrecorded@example.com', quota: { quota: 5, per: 'day' } },
    })
    const { sql } = app.services
    // A real failure of our own database at that exact step, not a mock: a trigger refuses it.
    await sql.unsafe(`
      create function refuse_sent() returns trigger language plpgsql as $$
      begin raise exception 'recording refused'; end $$;
      create trigger refuse_sent before update on outbox for each row
        when (new.status = 'sent' and new.subject = 'unrecorded') execute function refuse_sent();`)
    try {
      const count = sink.messages.length
      const response = await app.request('/send', {
        key: account.key,
        headers: { 'idempotency-key': 'unrecorded-1' },
        body: { to: 'x@example.com', subject: 'unrecorded', text_body: 'x' },
      })
      expect(response.status).toBe(500)
      expect(await response.json()).toEqual({ code: 'INTERNAL_ERROR', message: expect.any(String) })
      await sink.waitForMessages(count + 1)

      const [row] = await sql<{ status: string; used: number }[]>`
        select o.status, q.used from outbox o join quota_usage q on q.connection_id = o.connection_id
        where o.subject = 'unrecorded'`
      expect(row).toEqual({ status: 'sending', used: 1 })
      const retry = await app.request('/send', {
        key: account.key,
        headers: { 'idempotency-key': 'unrecorded-1' },
        body: { to: 'x@example.com', subject: 'unrecorded', text_body: 'x' },
      })
      expect(retry.status).toBe(400)
      expect(await retry.json()).toEqual({ code: 'IDEMPOTENCY_KEY_IN_FLIGHT', message: expect.any(String) })
      expect(sink.messages.length).toBe(count + 1)
    } finally {
      await sql.unsafe('drop trigger refuse_sent on outbox; drop function refuse_sent()')
    }
  })
})
