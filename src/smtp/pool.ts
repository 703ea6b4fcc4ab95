import { createHash } from 'node:crypto'
import { Socket } from 'node:net'
import { Readable } from 'node:stream'
import nodemailer, { type Transporter } from 'nodemailer'
import { resolveSmtpHost } from './host.ts'
import type { SentInfo } from './outcome.ts'
import { openPassword } from './secret-box.ts'
import { smtpTransportOptions } from './transport.ts'

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
      smtpTransportOptions(login, resolved, { pool: true, name: this.settings.ehloName }),
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
}

/**
 * What nodemailer's pool reads of a message it is handed (SMTPPool.send and PoolResource.send):
 * its envelope, its Message-ID (for its own log lines) and a stream of its bytes, made again if
 * the pool requeues the message on another session.
 */
interface PooledMessage {
  data: Record<string, never>
  /** Ours, not nodemailer's: marks a message a caller waits for, in the pool's queue. */
  callerWaits: boolean
  message: {
    getEnvelope(): RawMessage['envelope']
    messageId(): string
    getHeader(key: string): string | undefined
    createReadStream(): Readable
  }
}

type PoolSend = (mail: PooledMessage, callback: (error: Error | null, info: SentInfo) => void) => void

/** nodemailer's pool: how it is handed a message, and the messages waiting for a free session. */
interface Pool {
  send: PoolSend
  _queue?: { mail: PooledMessage }[]
}

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
 */
export function sendRaw(transporter: Transporter, message: RawMessage): Promise<SentInfo> {
  const pool = (transporter as unknown as { transporter: Pool }).transporter
  const pooled: PooledMessage = {
    data: {},
    callerWaits: message.callerWaits === true,
    message: {
      getEnvelope: () => message.envelope,
      messageId: () => message.messageId,
      getHeader: (key) => (key.toLowerCase() === 'message-id' ? message.messageId : undefined),
      createReadStream: () => new WholeMessage(message.raw),
    },
  }
  return new Promise((resolve, reject) => {
    pool.send(pooled, (error, info) => (error ? reject(error) : resolve(info)))
    if (pooled.callerWaits) moveAhead(pool, pooled)
  })
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
  constructor(raw: Buffer) {
    super({ read() {} })
    this.push(raw)
    this.push(null)
  }

  override pipe<T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T {
    const socket = (destination as { _readableState?: { pipes?: unknown[] } })._readableState?.pipes?.[0]
    if (!(socket instanceof Socket) || options?.end === false) return super.pipe(destination, options)
    socket.cork()
    const bytes: Buffer | null = this.read()
    if (bytes) destination.write(bytes)
    destination.end()
    // After the data stream's end-of-data line, which it may push on a later tick.
    setImmediate(() => socket.uncork())
    return destination
  }
}

/**
 * Moves a message the pool has just queued (last, until the pool next looks at its queue) ahead
 * of the queued mail no caller waits for. A closed pool queues nothing: there is nothing to move.
 * A change of nodemailer's queue shows in test/smtp/pool.test.ts.
 */
function moveAhead(pool: Pool, pooled: PooledMessage): void {
  const queue = pool._queue
  const entry = queue?.at(-1)
  if (!queue || entry?.mail !== pooled) return
  queue.pop()
  const behindCallers = queue.findIndex((waiting) => !waiting.mail.callerWaits)
  queue.splice(behindCallers === -1 ? queue.length : behindCallers, 0, entry)
}

/** The part of nodemailer's pool (SMTPPool and its PoolResource) that can end a session politely. */
interface PooledSession {
  available?: boolean
  connection?: { quit(): void; once(event: 'end', listener: () => void): void }
}

const GOODBYE_MS = 2_000

/**
 * nodemailer's pool drops its sessions without QUIT when it closes (servers log "lost
 * connection"); only its idle timer says goodbye. So each idle session is told QUIT first, and
 * given a moment for the server's 221, then the pool is closed. A change of nodemailer's
 * internals shows in the test that counts the QUITs a server receives.
 */
async function closePolitely(transporter: Transporter): Promise<void> {
  const pool = (transporter as unknown as { transporter?: { _connections?: PooledSession[] } }).transporter
  const goodbyes = (pool?._connections ?? []).flatMap((session) => {
    const connection = session.connection
    if (!session.available || !connection) return []
    // Not handed another message while it says goodbye.
    session.available = false
    return [
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, GOODBYE_MS)
        connection.once('end', () => {
          clearTimeout(timer)
          resolve()
        })
        connection.quit()
      }),
    ]
  })
  await Promise.all(goodbyes)
  transporter.close()
}

/** Changes whenever anything the SMTP session depends on changes (a new password gets a new IV). */
function fingerprintOf(c: SmtpAccount): string {
  return createHash('sha256')
    .update(`${c.host}\n${c.port}\n${c.username}\n${c.password_encrypted}`)
    .digest('hex')
}
