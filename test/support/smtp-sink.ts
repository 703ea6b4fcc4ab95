import { randomBytes } from 'node:crypto'
import type { Socket } from 'node:net'
import { SMTPServer, type SMTPServerError } from 'smtp-server'
import { inject } from 'vitest'
import type { SmtpLogin } from '../../src/smtp/transport.ts'

export interface ReceivedMessage {
  envelope: { from: string; to: string[] }
  raw: string
  /** Lower-case name -> unfolded value; the first occurrence of a repeated header wins. */
  headers: Map<string, string>
  receivedAt: Date
}

export interface SmtpReply {
  code: number
  message: string
}

export interface SinkBehaviour {
  /** Recipients refused at RCPT with `550 5.1.1` (compared case-insensitively). */
  rejectRecipients: string[]
  /** Recipients refused at RCPT with a reply of their own, e.g. `450 4.7.1` (lower-case keys). */
  recipientReplies: Record<string, SmtpReply>
  /** Reply to MAIL FROM instead of accepting it. */
  rejectMailFrom: SmtpReply | undefined
  /** Reply to DATA instead of accepting, e.g. `{ code: 451, message: '4.7.1 Try again later' }`. */
  rejectData: SmtpReply | undefined
  /** Greet every new connection with this reply instead (a server refusing sessions). */
  rejectConnection: SmtpReply | undefined
  /** Wait this long after the message arrived before replying to DATA. */
  dataDelayMs: number
  /**
   * Take the whole message, then destroy the socket instead of replying to DATA: the client
   * cannot know whether it was taken. The message goes to `dropped`, not `messages`.
   */
  dropAfterData: boolean
  /** Once this many messages were accepted, new connections and new transactions get 421. */
  throttleAfter: number | undefined
  /**
   * At most this many sessions at once (a server's per-client limit): one more is greeted with
   * `421 4.7.0 too many connections`, as Postfix does.
   */
  maxSessions: number | undefined
}

export interface SmtpSinkOptions {
  port: 465 | 587 | 2525
  /** A loopback address; by default one not used by another sink of any worker. */
  host?: string
  username?: string
  password?: string
  /** false: a server that never offers STARTTLS but would take AUTH in clear text. */
  offerStartTls?: boolean
  /** Certificate to present instead of the run's CA-signed one. */
  tls?: { key: string; cert: string }
  /**
   * The largest message taken (25 MiB by default), announced in EHLO as `SIZE <n>`: a larger
   * `SIZE=` at MAIL FROM, or a larger message after DATA, is refused with 552.
   */
  size?: number
  /** Announce a bare `SIZE`, keeping the limit to itself (still refused with 552). */
  hideSize?: boolean
  behaviour?: Partial<SinkBehaviour>
}

export interface SmtpSink {
  host: string
  port: 465 | 587 | 2525
  username: string
  password: string
  /** The login product code needs to reach this sink. */
  login: SmtpLogin
  messages: ReceivedMessage[]
  /** Messages received whole while `dropAfterData` was on, and never answered. */
  dropped: ReceivedMessage[]
  /** AUTH attempts seen, right or wrong: proves whether credentials ever reached the server. */
  readonly authAttempts: number
  /** Sessions opened (after the TLS handshake on 465), refused ones included. */
  readonly connections: number
  /** Sessions that ended, and of those the ones the client ended with QUIT. */
  readonly closed: number
  readonly quits: number
  /** The names clients introduced themselves with (EHLO), in order of their sessions. */
  readonly ehloNames: string[]
  /** Messages being received now: from DATA until the reply to it (see `dataDelayMs`). */
  readonly receiving: number
  /** The most messages that were being received at once. */
  readonly mostReceivingAtOnce: number
  /** Sessions greeted with 421 because `maxSessions` were open. */
  readonly refusedSessions: number
  /** The most sessions open at once that were not refused at connect. */
  readonly mostSessionsAtOnce: number
  /** The `SIZE=` each MAIL FROM declared, in order (null: none). */
  readonly declaredSizes: (number | null)[]
  /** Bytes of message received after DATA, refused messages included. */
  readonly dataBytes: number
  setBehaviour(patch: Partial<SinkBehaviour>): void
  waitForMessages(count: number, timeoutMs?: number): Promise<ReceivedMessage[]>
  close(): Promise<void>
}

function smtpError(code: number, message: string): SMTPServerError {
  const error: SMTPServerError = new Error(message)
  error.responseCode = code
  return error
}

// Sinks listen on the real SMTP ports, so parallel ones differ by address. Each vitest worker
// starts in its own block of 127.0.0.x; an address taken anyway (EADDRINUSE) is just skipped.
const BLOCK = 16
const FIRST = 2
const LAST = 254

function candidateHosts(): string[] {
  const worker = Number(process.env.VITEST_POOL_ID ?? process.env.VITEST_WORKER_ID ?? 1) || 1
  const blocks = Math.floor((LAST - FIRST + 1) / BLOCK)
  const start = FIRST + ((worker - 1) % blocks) * BLOCK
  const all = Array.from({ length: LAST - FIRST + 1 }, (_, i) => FIRST + i)
  const rotated = [...all.slice(start - FIRST), ...all.slice(0, start - FIRST)]
  return rotated.map((n) => `127.0.0.${n}`)
}

export async function startSmtpSink(options: SmtpSinkOptions): Promise<SmtpSink> {
  const { port } = options
  const username = options.username ?? 'sink-user'
  const password = options.password ?? `sink-${randomBytes(6).toString('hex')}`
  const offerStartTls = options.offerStartTls ?? true
  const certificate = options.tls ?? inject('tls')
  const behaviour: SinkBehaviour = {
    rejectRecipients: [],
    recipientReplies: {},
    rejectMailFrom: undefined,
    rejectData: undefined,
    rejectConnection: undefined,
    dataDelayMs: 0,
    dropAfterData: false,
    throttleAfter: undefined,
    maxSessions: undefined,
    ...options.behaviour,
  }
  const messages: ReceivedMessage[] = []
  const dropped: ReceivedMessage[] = []
  const waiters = new Set<() => void>()
  let authAttempts = 0
  let connections = 0
  let closed = 0
  let receiving = 0
  let mostReceivingAtOnce = 0
  const quitSessions = new Set<string>()
  const openSessions = new Set<string>()
  let refusedSessions = 0
  let mostSessionsAtOnce = 0
  const declaredSizes: (number | null)[] = []
  let dataBytes = 0
  const size = options.size ?? 25 * 1024 * 1024
  const tooBig = () => smtpError(552, `5.3.4 Message size exceeds fixed maximum message size (${size})`)
  const ehloNames: string[] = []
  const noteEhlo = (session: { id: string; hostNameAppearsAs?: string | false }) => {
    if (session.hostNameAppearsAs && !ehloNames.includes(`${session.id} ${session.hostNameAppearsAs}`)) {
      ehloNames.push(`${session.id} ${session.hostNameAppearsAs}`)
    }
  }
  // smtp-server logs every command a client sends: how the sink learns which sessions said QUIT.
  const noLog = () => {}
  const logger = {
    info: noLog,
    warn: noLog,
    error: noLog,
    trace: noLog,
    fatal: noLog,
    debug(meta: { tnx?: string; cid?: string; command?: string }) {
      if (meta?.tnx === 'command' && meta.command === 'QUIT' && meta.cid) quitSessions.add(meta.cid)
    },
  }

  const throttled = () => behaviour.throttleAfter !== undefined && messages.length >= behaviour.throttleAfter
  const tooMany = () => smtpError(421, '4.7.0 Too many messages, slow down')

  const server = new SMTPServer({
    secure: port === 465,
    key: certificate.key,
    cert: certificate.cert,
    authMethods: ['PLAIN', 'LOGIN'],
    disabledCommands: offerStartTls ? [] : ['STARTTLS'],
    // Only the client's own refusal then stands between the password and the wire.
    allowInsecureAuth: !offerStartTls,
    disableReverseLookup: true,
    banner: 'mailroom test sink',
    size,
    hideSize: options.hideSize ?? false,
    logger,
    closeTimeout: 200,
    onConnect(session, callback) {
      connections++
      const refusal = behaviour.rejectConnection
      if (throttled()) return callback(tooMany())
      if (refusal) return callback(smtpError(refusal.code, refusal.message))
      if (behaviour.maxSessions !== undefined && openSessions.size >= behaviour.maxSessions) {
        refusedSessions++
        return callback(smtpError(421, '4.7.0 too many connections'))
      }
      openSessions.add(session.id)
      mostSessionsAtOnce = Math.max(mostSessionsAtOnce, openSessions.size)
      callback()
    },
    onClose(session) {
      closed++
      openSessions.delete(session.id)
    },
    onAuth(auth, session, callback) {
      noteEhlo(session)
      authAttempts++
      if (auth.username === username && auth.password === password) return callback(null, { user: username })
      callback(smtpError(535, '5.7.8 Authentication credentials invalid'))
    },
    onMailFrom(address, session, callback) {
      noteEhlo(session)
      const declared = address.args ? (address.args as Record<string, string>).SIZE : undefined
      declaredSizes.push(declared === undefined ? null : Number(declared))
      const refusal = behaviour.rejectMailFrom
      if (throttled()) return callback(tooMany())
      if (refusal) return callback(smtpError(refusal.code, refusal.message))
      // smtp-server itself refuses a SIZE= over an announced limit, not over a hidden one.
      callback(declared !== undefined && Number(declared) > size ? tooBig() : null)
    },
    onRcptTo(address, _session, callback) {
      const lower = address.address.toLowerCase()
      const own = behaviour.recipientReplies[lower]
      if (own) return callback(smtpError(own.code, own.message))
      const refused = behaviour.rejectRecipients.some((r) => r.toLowerCase() === lower)
      callback(refused ? smtpError(550, `5.1.1 <${address.address}>: User unknown`) : null)
    },
    onData(stream, session, callback) {
      receiving++
      mostReceivingAtOnce = Math.max(mostReceivingAtOnce, receiving)
      const chunks: Buffer[] = []
      stream.on('data', (chunk: Buffer) => {
        dataBytes += chunk.length
        chunks.push(chunk)
      })
      stream.on('end', () => {
        const { dataDelayMs, dropAfterData } = behaviour
        const rejectData = stream.sizeExceeded
          ? { code: 552, message: tooBig().message }
          : behaviour.rejectData
        const received = (): ReceivedMessage => {
          const raw = Buffer.concat(chunks).toString('utf8')
          const { mailFrom, rcptTo } = session.envelope
          return {
            envelope: { from: mailFrom ? mailFrom.address : '', to: rcptTo.map((r) => r.address) },
            raw,
            headers: parseHeaders(raw),
            receivedAt: new Date(),
          }
        }
        if (dropAfterData) {
          receiving--
          dropped.push(received())
          // smtp-server keeps its sessions in `connections`; the session's id is the connection's.
          const sessions = (server as unknown as { connections: Set<{ id: string; _socket: Socket }> })
            .connections
          for (const connection of sessions) if (connection.id === session.id) connection._socket.destroy()
          return
        }
        setTimeout(() => {
          receiving--
          if (rejectData) return callback(smtpError(rejectData.code, rejectData.message))
          messages.push(received())
          for (const wake of waiters) wake()
          callback(null, `2.0.0 Ok: queued as ${randomBytes(6).toString('hex')}`)
        }, dataDelayMs)
      })
    },
  })
  // Clients failing the TLS handshake on purpose (tests of certificate checks) surface here.
  server.on('error', () => {})

  const host = await listen(server, port, options.host ? [options.host] : candidateHosts())

  return {
    host,
    port,
    username,
    password,
    login: { host, port, username, password },
    messages,
    dropped,
    get authAttempts() {
      return authAttempts
    },
    get receiving() {
      return receiving
    },
    get mostReceivingAtOnce() {
      return mostReceivingAtOnce
    },
    get refusedSessions() {
      return refusedSessions
    },
    get mostSessionsAtOnce() {
      return mostSessionsAtOnce
    },
    declaredSizes,
    get dataBytes() {
      return dataBytes
    },
    get connections() {
      return connections
    },
    get closed() {
      return closed
    },
    get quits() {
      return quitSessions.size
    },
    get ehloNames() {
      return ehloNames.map((entry) => entry.slice(entry.indexOf(' ') + 1))
    },
    setBehaviour(patch) {
      Object.assign(behaviour, patch)
    },
    waitForMessages(count, timeoutMs = 5_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (messages.length < count) return
          finish()
          resolve(messages.slice())
        }
        const timer = setTimeout(() => {
          finish()
          reject(
            new Error(`sink ${host}:${port} got ${messages.length} of ${count} messages in ${timeoutMs} ms`),
          )
        }, timeoutMs)
        const finish = () => {
          clearTimeout(timer)
          waiters.delete(check)
        }
        waiters.add(check)
        check()
      })
    },
    close() {
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

async function listen(server: SMTPServer, port: number, hosts: string[]): Promise<string> {
  for (const host of hosts) {
    const error = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
      const onError = (err: NodeJS.ErrnoException) => {
        server.server.off('listening', onListening)
        resolve(err)
      }
      const onListening = () => {
        server.server.off('error', onError)
        resolve(undefined)
      }
      server.server.once('error', onError)
      server.server.once('listening', onListening)
      server.server.listen(port, host)
    })
    if (!error) return host
    if (error.code !== 'EADDRINUSE' || hosts.length === 1) {
      throw new Error(`SMTP sink cannot listen on ${host}:${port}: ${error.message}`)
    }
  }
  throw new Error(`SMTP sink found no free loopback address for port ${port}`)
}

function parseHeaders(raw: string): Map<string, string> {
  const end = raw.search(/\r?\n\r?\n/)
  const block = end === -1 ? raw : raw.slice(0, end)
  const headers = new Map<string, string>()
  let current: [string, string] | undefined
  const flush = () => {
    if (current && !headers.has(current[0])) headers.set(current[0], current[1].trim())
  }
  for (const line of block.split(/\r?\n/)) {
    if (/^[ \t]/.test(line) && current) {
      current[1] += ` ${line.trim()}`
      continue
    }
    flush()
    const colon = line.indexOf(':')
    current = colon > 0 ? [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1)] : undefined
  }
  flush()
  return headers
}
