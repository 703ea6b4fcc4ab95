/**
 * An SMTP server misbehaving in every way one can, one row each. For
 * every fault the same account sends one message with POST /send and one with POST /enqueue
 * while the server misbehaves:
 * - /send answers a documented body only (429 RATE_LIMITED with Retry-After for provider
 *   push-back, 500 INTERNAL_ERROR with the server's reason otherwise; docs/decisions.md, "Quota,
 *   daily limit and pacing"), on one line, with no stack trace or file of ours in it;
 * - the queued message is queued again for later (`next_attempt_at`), with the reason as its
 *   error, counted as push-back (which never fails it) or, the connection's server out of reach,
 *   as at most one transient failure (that of the attempt that found the outage: then a probe
 *   speaks for the connection), and its connection is not paused by one outage;
 * - once the server behaves again, the queued message is delivered exactly once; and where the
 *   outcome was unknown (the server took the whole message and the client never heard back) a
 *   second copy may arrive, with the same Message-ID (docs/decisions.md, "Delivery guarantees").
 */
import { beforeAll, describe, expect, inject, it } from 'vitest'
import { listConnections } from '../../src/connections/connections.ts'
import { retryPolicy } from '../../src/queue/retry-policy.ts'
import { useTestApp } from '../support/app.ts'
import { humanText } from '../support/matchers.ts'
import { email, enqueued, waitForOutbox, waitForOutboxStatus } from '../support/queue.ts'
import { expectRetryAfter, postSend, type Reply, type Sender, startSender } from '../support/sending.ts'
import type { SinkBehaviour, SmtpSink } from '../support/smtp-sink.ts'
import { makeCertificate } from '../support/tls.ts'

/**
 * The SMTP sessions give up on a silent server after this long (30 s in service), idle ones
 * ending with QUIT before it: a server that answers later than it is waited out in seconds.
 */
const SMTP_SOCKET_TIMEOUT_MS = 10_000

const app = useTestApp({ smtpIdleMs: 8_000 }, { smtpSocketTimeoutMs: SMTP_SOCKET_TIMEOUT_MS })

/** Retries 1.5 s apart: long enough to see the message queued again before the server recovers. */
const RETRY = retryPolicy(1_500, 6, 1_500)

beforeAll(async () => {
  // Probed as often as retried: a server back from an outage is found as soon as a retry would.
  await app.worker({ retry: RETRY, concurrency: 16, probeIntervalMs: 1_500 })
})

const HOUR = 3_600_000

/** What a server that behaves does: every fault below is undone by this. */
const BEHAVES: Partial<SinkBehaviour> = {
  rejectConnection: undefined,
  rejectMailFrom: undefined,
  rejectData: undefined,
  dataDelayMs: 0,
  dropAfterData: false,
}

type Certificate = { key: string; cert: string }

interface Fault {
  name: string
  /**
   * How the server misbehaves: a behaviour of the running sink, nothing listening at its address,
   * or a sink there presenting another certificate.
   */
  server: Partial<SinkBehaviour> | 'closed' | { certificate: () => Promise<Certificate> }
  /** What POST /send answers. */
  send: 429 | 500
  /** In /send's message and in the queued record's error. */
  reason: RegExp
  /** How the queue counts the failed attempt: push-back (backs off, never fails) or a transient failure. */
  queue: 'pushback' | 'unreachable'
  /**
   * The server took the whole message after the client gave up on it (outcome unknown): a
   * second copy may arrive, with the same Message-ID.
   */
  outcomeUnknown?: true
}

/** Every address a sink may take: the expired certificate is wrong in its dates alone. */
const LOOPBACK = Array.from({ length: 254 }, (_, i) => `127.0.0.${i + 1}`)

const ca = () => ({ key: inject('tls').caKey, cert: inject('tls').caPem })

const FAULTS: Fault[] = [
  {
    name: 'connection dropped after DATA, before the reply',
    server: { dropAfterData: true },
    send: 500,
    reason: /Connection closed unexpectedly/,
    queue: 'unreachable',
    // Outcome unknown too, but the sink keeps what it dropped apart (`dropped`): that copy is
    // checked for its Message-ID below.
  },
  {
    name: 'connection refused (nothing listening)',
    server: 'closed',
    send: 500,
    reason: /ECONNREFUSED/,
    queue: 'unreachable',
  },
  {
    name: 'sessions refused with a 421 greeting',
    server: { rejectConnection: { code: 421, message: '4.7.0 Too many connections, try again later' } },
    send: 429,
    reason: /421 4\.7\.0 Too many connections/,
    queue: 'pushback',
  },
  {
    name: 'DATA answered later than the SMTP timeout',
    server: { dataDelayMs: SMTP_SOCKET_TIMEOUT_MS + 5_000 },
    send: 500,
    reason: /timeout/i,
    queue: 'unreachable',
    outcomeUnknown: true,
  },
  ...(
    [
      [421, '4.7.0 Too many messages, slow down'],
      [450, '4.2.1 Mailbox temporarily unavailable'],
      [454, '4.7.0 Temporary service failure'],
    ] as const
  ).flatMap(([code, message]) => [
    {
      name: `throttled at MAIL FROM: ${code} ${message}`,
      server: { rejectMailFrom: { code, message } },
      send: 429 as const,
      reason: new RegExp(`${code} ${message.replace(/\./g, '\\.')}`),
      queue: 'pushback' as const,
    },
    {
      name: `throttled at DATA: ${code} ${message}`,
      server: { rejectData: { code, message } },
      send: 429 as const,
      reason: new RegExp(`${code} ${message.replace(/\./g, '\\.')}`),
      queue: 'pushback' as const,
    },
  ]),
  ...(
    [
      ['Gmail', 'rejectData', 550, '5.4.5 Daily user sending quota exceeded'],
      ['Gmail', 'rejectMailFrom', 550, '5.4.5 Daily user sending quota exceeded'],
      [
        'Microsoft',
        'rejectData',
        554,
        '5.2.0 STOREDRV.Submission.Exception:SubmissionQuotaExceededException',
      ],
      ['SES', 'rejectData', 454, 'Throttling failure: Daily message quota exceeded'],
    ] as const
  ).map(([provider, stage, code, message]) => ({
    name: `${provider} quota reply at ${stage === 'rejectData' ? 'DATA' : 'MAIL FROM'}: ${code} ${message}`,
    server: { [stage]: { code, message } },
    send: 429 as const,
    reason: new RegExp(`${code} ${message.replace(/\./g, '\\.')}`),
    queue: 'pushback' as const,
  })),
  {
    name: 'an expired certificate',
    server: {
      certificate: () =>
        makeCertificate({ ips: LOOPBACK }, ca(), {
          notBeforeDate: new Date(Date.now() - 48 * HOUR),
          notAfterDate: new Date(Date.now() - 24 * HOUR),
        }),
    },
    send: 500,
    reason: /TLS failed: certificate has expired/,
    queue: 'unreachable',
  },
  {
    name: 'a certificate for another host name',
    server: { certificate: () => makeCertificate({ dnsNames: ['mail.other-host.example'] }, ca()) },
    send: 500,
    reason: /TLS failed: Hostname\/IP does not match certificate's altnames/,
    queue: 'unreachable',
  },
]

/** One row's account, and every sink that stood at its connection's address in turn. */
interface Row {
  sender: Sender
  sinks: SmtpSink[]
  current: SmtpSink | undefined
}

/**
 * A new sink where the row's connection points, with the same login. Should another test run on
 * this machine have taken the freed address meanwhile, the connection is moved to the new one,
 * which is the same situation for Mailroom.
 */
async function reopen(row: Row, tls?: Certificate): Promise<void> {
  const first = row.sinks[0] as SmtpSink
  const options = {
    port: first.port,
    username: first.username,
    password: first.password,
    ...(tls ? { tls } : {}),
  }
  const host = row.sinks.at(-1)?.host as string
  let sink: SmtpSink
  try {
    sink = await app.sink({ ...options, host })
  } catch (error) {
    if (!/EADDRINUSE/.test(String(error))) throw error
    sink = await app.sink(options)
    await app.services.sql`update connections set host = ${sink.host} where id = ${row.sender.connectionId}`
  }
  row.sinks.push(sink)
  row.current = sink
}

async function misbehave(row: Row, fault: Fault): Promise<void> {
  const { server } = fault
  if (server !== 'closed' && !('certificate' in server)) return row.current?.setBehaviour(server)
  await row.current?.close()
  row.current = undefined
  if (server !== 'closed') await reopen(row, await server.certificate())
}

async function behave(row: Row, fault: Fault): Promise<void> {
  const { server } = fault
  if (server !== 'closed' && !('certificate' in server)) return row.current?.setBehaviour(BEHAVES)
  await row.current?.close()
  await reopen(row)
}

/** What /send answered is the documented body for the fault, and nothing of our internals. */
function expectSendAnswer(fault: Fault, reply: Reply): void {
  expect(reply.status, JSON.stringify(reply.body)).toBe(fault.send)
  if (fault.send === 429) {
    expect(reply.body).toEqual({
      code: 'RATE_LIMITED',
      message: humanText,
      details: { retryAfter: expect.any(Number) },
    })
    expectRetryAfter(reply)
  } else {
    expect(reply.body).toEqual({ code: 'INTERNAL_ERROR', message: humanText })
  }
  const message = reply.body.message as string
  expect(message).toMatch(fault.reason)
  expect(message, 'one line').not.toMatch(/[\r\n]/)
  expect(message, 'no stack frame or file of ours').not.toMatch(/\bat \S+ \(|node:internal|\/src\/|\.ts\b/)
}

/** Copies the row's servers took of the message with `subject`, and their Message-IDs. */
function copiesOf(row: Row, subject: string): string[] {
  return row.sinks
    .flatMap((sink) => sink.messages)
    .filter((m) => m.headers.get('subject') === subject)
    .map((m) => m.headers.get('message-id') as string)
}

async function counters(id: number): Promise<{ failures: number; deferrals: number }> {
  const [row] = await app.services.sql<{ failures: number; deferrals: number }[]>`
    select failures, deferrals from outbox where id = ${id}`
  return row as { failures: number; deferrals: number }
}

async function attemptKinds(id: number): Promise<string[]> {
  const rows = await app.services.sql<{ outcome: string }[]>`
    select outcome from outbox_attempts where outbox_id = ${id} order by id`
  return rows.map((r) => r.outcome)
}

let seq = 0

describe.concurrent('SMTP faults: what /send answers, what the queue does, nothing lost', () => {
  it.each(FAULTS)('$name', { timeout: 120_000 }, async (fault) => {
    const n = ++seq
    const sender = await startSender(app, `fault${n}-`, { plan: 'pro' })
    const row: Row = { sender, sinks: [sender.sink], current: sender.sink }
    await misbehave(row, fault)

    const sent = email({ subject: `fault ${n} sent now` })
    const queued = email({ subject: `fault ${n} queued` })
    // Side by side: a fault that makes the client wait for its timeout costs that wait once.
    const [reply, id] = await Promise.all([
      postSend(app, sender.key, sent),
      enqueued(app, sender.key, queued),
    ])
    expectSendAnswer(fault, reply)

    // Queued again for later with the reason, not failed, while the server still misbehaves.
    const again = await waitForOutbox(
      app,
      sender.accountId,
      id,
      (r) => r.attempts >= 1 && r.status !== 'sending',
      SMTP_SOCKET_TIMEOUT_MS * 2,
    )
    expect(again).toMatchObject({ status: 'queued', next_attempt_at: expect.any(String) })
    expect(again.error).toMatch(fault.reason)
    const counted = await counters(id)
    if (fault.queue === 'pushback') expect(counted).toMatchObject({ failures: 0, deferrals: again.attempts })
    else {
      expect(counted.deferrals).toBe(0)
      expect(counted.failures).toBeLessThanOrEqual(1)
    }
    expect((await attemptKinds(id))[0]).toBe(fault.queue)
    const [connection] = await listConnections(app.services.sql, sender.accountId)
    expect(connection?.status, 'one outage pauses nothing').toBe('active')

    await behave(row, fault)
    const delivered = await waitForOutboxStatus(app, sender.accountId, id, 'sent', 30_000)
    expect((await attemptKinds(id)).at(-1)).toBe('delivered')

    // Delivered once, with the Message-ID the outbox recorded; a second copy only where the
    // outcome of an attempt was unknown, and then with the same Message-ID.
    const copies = copiesOf(row, queued.subject as string)
    expect(new Set(copies)).toEqual(new Set([delivered.message_id]))
    expect(copies.length).toBeLessThanOrEqual(fault.outcomeUnknown ? 2 : 1)
    const dropped = row.sinks
      .flatMap((sink) => sink.dropped)
      .filter((m) => m.headers.get('subject') === queued.subject)
    if (fault.server !== 'closed' && 'dropAfterData' in fault.server) {
      expect(
        dropped.length,
        'the server had the whole message when it dropped the connection',
      ).toBeGreaterThan(0)
    }
    for (const m of dropped) {
      expect(m.headers.get('message-id'), 'the dropped attempt carried the same Message-ID').toBe(
        delivered.message_id,
      )
    }
    // What /send failed is not sent behind the caller's back; a server that had it whole may
    // deliver it anyway (outcome unknown), once.
    expect(copiesOf(row, sent.subject as string).length).toBeLessThanOrEqual(fault.outcomeUnknown ? 1 : 0)
    const [sendRecord] = await app.services.sql<{ status: string }[]>`
      select status from outbox where account_id = ${sender.accountId} and subject = ${sent.subject as string}`
    expect(sendRecord?.status).toBe('failed')
  })
})
