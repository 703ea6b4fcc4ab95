import { createHash } from 'node:crypto'
import { Readable } from 'node:stream'
import nodemailer, { type Transporter } from 'nodemailer'
import { resolveSmtpHost } from './host.ts'
import {
  closeSession,
  handToPool,
  liveSessions,
  offeredExtensions,
  onceSessionClosed,
  type PooledMessage,
  type PooledSession,
  pooledMessage,
  poolOf,
  queueOf,
  quitSession,
  type SmtpPool,
  sessionCap,
  sessionsOf,
  setSessionCap,
  socketUnder,
  whenSessionFree,
} from './nodemailer-internals.ts'
import type { SentInfo } from './outcome.ts'
import { openPassword } from './secret-box.ts'
import { SessionLimit } from './session-limit.ts'
import { isRefusedAtConnect, smtpTransportOptions } from './transport.ts'

/** What a pooled session needs of a connection. */
export interface SmtpAccount {
  id: number
  host: string
  port: number
  username: string
  password_encrypted: string
}

/** How this process's SMTP sessions are made. */
export interface SmtpSettings {
  allowPrivateHosts: boolean
  /** The EHLO name (MAILROOM_EHLO_NAME). */
  ehloName: string
  /** How long a session may sit idle before it is ended with QUIT (MAILROOM_SMTP_IDLE_MS). */
  idleMs: number
  /** How long a silent socket is waited for, when not the default (tests only, see ServiceOptions). */
  socketTimeoutMs?: number
}

interface Entry {
  fingerprint: string
  transporter: Promise<Transporter>
}

/**
 * One pooled nodemailer transport per connection, reused across requests and rebuilt when the
 * connection's login changes. A process holds one pool; `close` ends every SMTP session, each
 * with QUIT.
 */
export class TransportPool {
  private readonly entries = new Map<number, Entry>()

  constructor(
    private readonly secret: string,
    private readonly settings: SmtpSettings,
  ) {}

  get(connection: SmtpAccount): Promise<Transporter> {
    const fingerprint = fingerprintOf(connection)
    const current = this.entries.get(connection.id)
    if (current?.fingerprint === fingerprint) return current.transporter
    if (current) void current.transporter.then(closePolitely, () => {})
    const transporter = this.open(connection)
    this.entries.set(connection.id, { fingerprint, transporter })
    // A failed DNS check must not stick: the next send tries again.
    transporter.catch(() => {
      if (this.entries.get(connection.id)?.transporter === transporter) this.entries.delete(connection.id)
    })
    return transporter
  }

  async close(): Promise<void> {
    const all = [...this.entries.values()]
    this.entries.clear()
    await Promise.allSettled(all.map(async (entry) => closePolitely(await entry.transporter)))
  }

  private async open(connection: SmtpAccount): Promise<Transporter> {
    // Resolved once per transport: the socket goes to the address that passed the check.
    const resolved = await resolveSmtpHost(connection.host, this.settings.allowPrivateHosts)
    const login = {
      host: connection.host,
      port: connection.port,
      username: connection.username,
      password: openPassword(this.secret, connection.password_encrypted),
    }
    return nodemailer.createTransport(
      smtpTransportOptions(login, resolved, {
        pool: true,
        name: this.settings.ehloName,
        idleMs: this.settings.idleMs,
        socketTimeoutMs: this.settings.socketTimeoutMs,
      }),
    )
  }
}

/** A message for a session: who it goes to in this attempt, and its bytes, composed whole. */
export interface RawMessage {
  envelope: { from: string; to: string[] }
  raw: Buffer
  messageId: string
  /**
   * A caller is waiting for this send's answer (POST /send): it goes ahead of the queue's mail
   * waiting for a session of the same connection (see sendRaw).
   */
  callerWaits?: boolean
  /** The message needs SMTPUTF8: it is never sent to a server that does not offer it. */
  smtpUtf8?: boolean
  /** Its bytes are an app's, which may hold 8-bit text: declared so to a server offering 8BITMIME. */
  eightBit?: boolean
}

const limits = new WeakMap<SmtpPool, SessionLimit>()

/**
 * Hands a composed message straight to the connection's pool. `sendMail` would first run
 * nodemailer's plugins and compose the raw message again into a node of its own (random
 * boundary and Message-ID, a stream pipeline with an AbortController), about half of the
 * client's CPU for a message; the pool needs none of it. A change of nodemailer's internals
 * shows in every test that sends.
 *
 * The pool serves its queue in order, and a queue run keeps up to 32 of a connection's messages
 * in it: a POST /send behind them would wait for all of them (a p50 of 220 ms in the bench's
 * mixed row). So a message a caller waits for goes ahead of every queued one, behind those
 * callers that came before it.
 *
 * A new session the server refuses at connect while others of the connection work hands its
 * message back to the pool (see sessionLimitOf).
 *
 * A message that needs SMTPUTF8 is checked against the server's EHLO reply on the session about
 * to send it, before its envelope: it goes unchanged or not at all.
 */
export function sendRaw(transporter: Transporter, message: RawMessage): Promise<SentInfo> {
  const pool = poolOf(transporter)
  let unoffered = false
  const pooled = pooledMessage({
    envelope: message.envelope,
    size: message.raw.length,
    messageId: message.messageId,
    callerWaits: message.callerWaits === true,
    eightBit: message.eightBit === true,
    stream: () => new WholeMessage(message.raw),
    sendable: () => {
      unoffered = message.smtpUtf8 === true && !offeredExtensions(pool)?.includes('SMTPUTF8')
      return !unoffered
    },
  })
  return new Promise((resolve, reject) => {
    const limit = sessionLimitOf(pool)
    let refusals = 0
    const hand = () => {
      handToPool(pool, pooled, (error, info) => {
        if (unoffered) return reject(smtpUtf8Unoffered())
        if (!error) {
          limit.carried()
          setSessionCap(pool, limit.current)
          return resolve(info)
        }
        const others = isRefusedAtConnect(error) ? liveSessions(pool) : 0
        // With no other session open, the refusal is the server's answer to the connection
        // (push-back). A message is handed back a bounded number of times.
        if (others === 0 || refusals >= limit.most) return reject(error)
        refusals++
        limit.refused(others)
        setSessionCap(pool, limit.current)
        hand()
      })
      if (pooled.callerWaits) moveAhead(pool, pooled)
    }
    hand()
  })
}

/**
 * A message that needs SMTPUTF8 (an address or header in UTF-8) and a server that does not offer
 * it: the message is refused for good before a word of it was sent, as one larger than the
 * server's SIZE is (nodemailer's EMESSAGE without a reply), since it cannot go unchanged.
 */
function smtpUtf8Unoffered(): Error {
  const message =
    "The provider's SMTP server does not offer SMTPUTF8, which this message needs (UTF-8 in an address or header); it was not sent"
  return Object.assign(new Error(message), { code: 'EMESSAGE' })
}

/**
 * The connection's session count (see SessionLimit): a new session refused at connect while
 * others work hands its message back to the pool, where it waits for one of them, and the pool
 * opens no more sessions than the server let in. Nothing of the message was sent on it.
 */
function sessionLimitOf(pool: SmtpPool): SessionLimit {
  let limit = limits.get(pool)
  if (!limit) {
    limit = new SessionLimit(sessionCap(pool))
    limits.set(pool, limit)
  }
  return limit
}

/**
 * A message's bytes as nodemailer's session reads them: it pipes them into its data stream
 * (which stuffs dots and adds the end-of-data line), itself piped into the socket. Piped as they
 * came, the message and the end-of-data line were two socket writes, two TLS records, two
 * wake-ups of the server a message; here the socket is corked while the data stream takes both,
 * so they leave together behind the envelope (a message larger than the socket buffers still
 * leaves in parts). The bytes are read as they are handed over, as when piped: the pool sends a
 * message again on another session only if it was never read (`readableDidRead`). A change of
 * nodemailer's internals shows in test/sending/send-transport.test.ts, which counts the records.
 */
class WholeMessage extends Readable {
  constructor(private readonly raw: Buffer) {
    super({ read() {} })
    this.push(raw)
    this.push(null)
  }

  override pipe<T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T {
    const socket = socketUnder(destination)
    if (!socket || options?.end === false) return super.pipe(destination, options)
    if (this.raw.length > LARGE_MESSAGE_BYTES) {
      this.read()
      void writeInSlices(this.raw, destination)
      return destination
    }
    socket.cork()
    const bytes: Buffer | null = this.read()
    if (bytes) destination.write(bytes)
    destination.end()
    // After the data stream's end-of-data line, which it may push on a later tick.
    setImmediate(() => socket.uncork())
    return destination
  }
}

/** Messages larger than this (those with attachments) go to the data stream a slice at a time. */
const LARGE_MESSAGE_BYTES = 1024 * 1024
const MESSAGE_SLICE_BYTES = 256 * 1024

/**
 * A large message's bytes into nodemailer's data stream a slice at a time, each on a turn of
 * the event loop of its own and after the socket drained: the data stream stuffs dots byte by
 * byte, about 50 ms for a whole 14 MB message, which would hold every other request meanwhile.
 * A session that closes midway ends the writing (nodemailer reports the failure).
 */
async function writeInSlices(raw: Buffer, destination: NodeJS.WritableStream): Promise<void> {
  const writable = destination as NodeJS.WritableStream & { destroyed?: boolean }
  for (let at = 0; at < raw.length; at += MESSAGE_SLICE_BYTES) {
    if (writable.destroyed) return
    const flowing = destination.write(raw.subarray(at, at + MESSAGE_SLICE_BYTES))
    await new Promise<void>((resolve) => {
      if (flowing) return setImmediate(resolve)
      const done = () => {
        destination.off('drain', done)
        destination.off('close', done)
        resolve()
      }
      destination.once('drain', done)
      destination.once('close', done)
    })
  }
  if (!writable.destroyed) destination.end()
}

/**
 * Moves a message the pool has just queued (last, until the pool next looks at its queue) ahead
 * of the queued mail no caller waits for. A closed pool queues nothing: there is nothing to move.
 * A change of nodemailer's queue shows in test/smtp/pool.test.ts.
 */
function moveAhead(pool: SmtpPool, pooled: PooledMessage): void {
  const queue = queueOf(pool)
  const entry = queue?.at(-1)
  if (!queue || entry?.mail !== pooled) return
  queue.pop()
  const behindCallers = queue.findIndex((waiting) => !waiting.mail.callerWaits)
  queue.splice(behindCallers === -1 ? queue.length : behindCallers, 0, entry)
}

const GOODBYE_MS = 2_000

/**
 * nodemailer's pool drops its sessions without QUIT when it closes (servers log "lost
 * connection"); only its idle timer says goodbye. So each session is told QUIT: an idle one at
 * once, a busy one as soon as it is done with its message (ahead of the pool, which would drop
 * it), and each is given a moment for the server's 221. A change of nodemailer's internals shows
 * in the tests that count the QUITs a server receives.
 */
async function closePolitely(transporter: Transporter): Promise<void> {
  const goodbyes = sessionsOf(poolOf(transporter)).map(goodbye)
  transporter.close()
  await Promise.all(goodbyes)
}

function goodbye(session: PooledSession): Promise<void> {
  return new Promise<void>((resolve) => {
    let timer: NodeJS.Timeout | undefined
    onceSessionClosed(session, () => {
      clearTimeout(timer)
      resolve()
    })
    // A server that never answers is left after a moment.
    whenSessionFree(session, () =>
      quitSession(session, () => {
        timer = setTimeout(() => closeSession(session), GOODBYE_MS)
      }),
    )
  })
}

/** Changes whenever anything the SMTP session depends on changes (a new password gets a new IV). */
function fingerprintOf(c: SmtpAccount): string {
  return createHash('sha256')
    .update(`${c.host}\n${c.port}\n${c.username}\n${c.password_encrypted}`)
    .digest('hex')
}
