import { randomBytes } from 'node:crypto'
import type { SMTPServer } from 'smtp-server'
import type { SmtpLogin } from '../../src/smtp/transport.ts'
import { type SinkState, sinkServer } from './smtp-sink-server.ts'

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
  /** Leave SMTPUTF8 out of the EHLO reply: a server that cannot take UTF-8 addresses or headers. */
  hideSmtpUtf8?: boolean
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
  /** The `BODY=` each MAIL FROM declared (`8BITMIME`), in order (null: none). */
  readonly declaredBodies: (string | null)[]
  /** Bytes of message received after DATA, refused messages included. */
  readonly dataBytes: number
  setBehaviour(patch: Partial<SinkBehaviour>): void
  waitForMessages(count: number, timeoutMs?: number): Promise<ReceivedMessage[]>
  close(): Promise<void>
}

// Sinks listen on the real SMTP ports, so parallel ones differ by address. Each vitest worker
// starts in its own block of 127.0.0.x; an address taken anyway (EADDRINUSE) is just skipped.
const BLOCK = 16
const FIRST = 2
const LAST = 254

export function candidateHosts(): string[] {
  const worker = Number(process.env.VITEST_POOL_ID ?? process.env.VITEST_WORKER_ID ?? 1) || 1
  const blocks = Math.floor((LAST - FIRST + 1) / BLOCK)
  const start = FIRST + ((worker - 1) % blocks) * BLOCK
  const all = Array.from({ length: LAST - FIRST + 1 }, (_, i) => FIRST + i)
  const rotated = [...all.slice(start - FIRST), ...all.slice(0, start - FIRST)]
  return rotated.map((n) => `127.0.0.${n}`)
}

export async function startSmtpSink(options: SmtpSinkOptions): Promise<SmtpSink> {
  const { port } = options
  const state: SinkState = {
    behaviour: {
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
    },
    username: options.username ?? 'sink-user',
    password: options.password ?? `sink-${randomBytes(6).toString('hex')}`,
    size: options.size ?? 25 * 1024 * 1024,
    messages: [],
    dropped: [],
    waiters: new Set(),
    authAttempts: 0,
    connections: 0,
    closed: 0,
    receiving: 0,
    mostReceivingAtOnce: 0,
    quitSessions: new Set(),
    openSessions: new Set(),
    refusedSessions: 0,
    mostSessionsAtOnce: 0,
    declaredSizes: [],
    declaredBodies: [],
    dataBytes: 0,
    ehloNames: [],
  }
  const server = sinkServer(state, options)
  // Clients failing the TLS handshake on purpose (tests of certificate checks) surface here.
  server.on('error', () => {})
  const host = await listen(server, port, options.host ? [options.host] : candidateHosts())
  return sinkOf(state, server, host, port)
}

function sinkOf(state: SinkState, server: SMTPServer, host: string, port: SmtpSinkOptions['port']): SmtpSink {
  const { username, password, messages } = state
  return {
    host,
    port,
    username,
    password,
    login: { host, port, username, password },
    messages,
    dropped: state.dropped,
    get authAttempts() {
      return state.authAttempts
    },
    get receiving() {
      return state.receiving
    },
    get mostReceivingAtOnce() {
      return state.mostReceivingAtOnce
    },
    get refusedSessions() {
      return state.refusedSessions
    },
    get mostSessionsAtOnce() {
      return state.mostSessionsAtOnce
    },
    declaredSizes: state.declaredSizes,
    declaredBodies: state.declaredBodies,
    get dataBytes() {
      return state.dataBytes
    },
    get connections() {
      return state.connections
    },
    get closed() {
      return state.closed
    },
    get quits() {
      return state.quitSessions.size
    },
    get ehloNames() {
      return state.ehloNames.map((entry) => entry.slice(entry.indexOf(' ') + 1))
    },
    setBehaviour(patch) {
      Object.assign(state.behaviour, patch)
    },
    waitForMessages: (count, timeoutMs = 5_000) =>
      waitForMessages(state, `${host}:${port}`, count, timeoutMs),
    close() {
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

function waitForMessages(
  { messages, waiters }: SinkState,
  where: string,
  count: number,
  timeoutMs: number,
): Promise<ReceivedMessage[]> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (messages.length < count) return
      finish()
      resolve(messages.slice())
    }
    const timer = setTimeout(() => {
      finish()
      reject(new Error(`sink ${where} got ${messages.length} of ${count} messages in ${timeoutMs} ms`))
    }, timeoutMs)
    const finish = () => {
      clearTimeout(timer)
      waiters.delete(check)
    }
    waiters.add(check)
    check()
  })
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
