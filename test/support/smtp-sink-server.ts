/**
 * The SMTP server of a test sink (test/support/smtp-sink.ts): its handlers answer each command as
 * the sink's behaviour says and note what they saw in the sink's state.
 */
import { randomBytes } from 'node:crypto'
import type { Socket } from 'node:net'
import { SMTPServer, type SMTPServerError } from 'smtp-server'
import { inject } from 'vitest'
import type { ReceivedMessage, SinkBehaviour, SmtpSinkOptions } from './smtp-sink.ts'

/** What a sink has seen and how it behaves, changed by its server's handlers as sessions go. */
export interface SinkState {
  behaviour: SinkBehaviour
  username: string
  password: string
  /** The largest message taken. */
  size: number
  messages: ReceivedMessage[]
  dropped: ReceivedMessage[]
  waiters: Set<() => void>
  authAttempts: number
  connections: number
  closed: number
  receiving: number
  mostReceivingAtOnce: number
  quitSessions: Set<string>
  openSessions: Set<string>
  refusedSessions: number
  mostSessionsAtOnce: number
  declaredSizes: (number | null)[]
  declaredBodies: (string | null)[]
  dataBytes: number
  /** `<session id> <name>` of each EHLO name, once per session. */
  ehloNames: string[]
}

function smtpError(code: number, message: string): SMTPServerError {
  const error: SMTPServerError = new Error(message)
  error.responseCode = code
  return error
}

function tooBig(size: number): SMTPServerError {
  return smtpError(552, `5.3.4 Message size exceeds fixed maximum message size (${size})`)
}

function throttled({ behaviour, messages }: SinkState): boolean {
  return behaviour.throttleAfter !== undefined && messages.length >= behaviour.throttleAfter
}

function tooMany(): SMTPServerError {
  return smtpError(421, '4.7.0 Too many messages, slow down')
}

function noteEhlo(state: SinkState, session: { id: string; hostNameAppearsAs?: string | false }): void {
  const entry = `${session.id} ${session.hostNameAppearsAs}`
  if (session.hostNameAppearsAs && !state.ehloNames.includes(entry)) state.ehloNames.push(entry)
}

/** smtp-server logs every command a client sends: how the sink learns which sessions said QUIT. */
function quitLogger(state: SinkState) {
  const noLog = () => {}
  return {
    info: noLog,
    warn: noLog,
    error: noLog,
    trace: noLog,
    fatal: noLog,
    debug(meta: { tnx?: string; cid?: string; command?: string }) {
      if (meta?.tnx === 'command' && meta.command === 'QUIT' && meta.cid) state.quitSessions.add(meta.cid)
    },
  }
}

export function sinkServer(state: SinkState, options: SmtpSinkOptions): SMTPServer {
  const offerStartTls = options.offerStartTls ?? true
  const certificate = options.tls ?? inject('tls')
  const { behaviour, username, password, size } = state
  const server: SMTPServer = new SMTPServer({
    secure: options.port === 465,
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
    hideSMTPUTF8: options.hideSmtpUtf8 ?? false,
    logger: quitLogger(state),
    closeTimeout: 200,
    onConnect(session, callback) {
      state.connections++
      const refusal = behaviour.rejectConnection
      if (throttled(state)) return callback(tooMany())
      if (refusal) return callback(smtpError(refusal.code, refusal.message))
      if (behaviour.maxSessions !== undefined && state.openSessions.size >= behaviour.maxSessions) {
        state.refusedSessions++
        return callback(smtpError(421, '4.7.0 too many connections'))
      }
      state.openSessions.add(session.id)
      state.mostSessionsAtOnce = Math.max(state.mostSessionsAtOnce, state.openSessions.size)
      callback()
    },
    onClose(session) {
      state.closed++
      state.openSessions.delete(session.id)
    },
    onAuth(auth, session, callback) {
      noteEhlo(state, session)
      state.authAttempts++
      if (auth.username === username && auth.password === password) return callback(null, { user: username })
      callback(smtpError(535, '5.7.8 Authentication credentials invalid'))
    },
    onMailFrom(address, session, callback) {
      noteEhlo(state, session)
      const declared = address.args ? (address.args as Record<string, string>).SIZE : undefined
      state.declaredSizes.push(declared === undefined ? null : Number(declared))
      state.declaredBodies.push(address.args ? ((address.args as Record<string, string>).BODY ?? null) : null)
      const refusal = behaviour.rejectMailFrom
      if (throttled(state)) return callback(tooMany())
      if (refusal) return callback(smtpError(refusal.code, refusal.message))
      // smtp-server itself refuses a SIZE= over an announced limit, not over a hidden one.
      callback(declared !== undefined && Number(declared) > size ? tooBig(size) : null)
    },
    onRcptTo(address, _session, callback) {
      const lower = address.address.toLowerCase()
      const own = behaviour.recipientReplies[lower]
      if (own) return callback(smtpError(own.code, own.message))
      const refused = behaviour.rejectRecipients.some((r) => r.toLowerCase() === lower)
      callback(refused ? smtpError(550, `5.1.1 <${address.address}>: User unknown`) : null)
    },
    onData: (stream, session, callback) => receiveData(state, server, stream, session, callback),
  })
  return server
}

type DataHandler = NonNullable<ConstructorParameters<typeof SMTPServer>[0]>['onData']
type DataArguments = Parameters<NonNullable<DataHandler>>

/** Takes a message after DATA, then answers as the sink's behaviour says, or drops the session. */
function receiveData(
  state: SinkState,
  server: SMTPServer,
  stream: DataArguments[0],
  session: DataArguments[1],
  callback: DataArguments[2],
): void {
  const { behaviour } = state
  state.receiving++
  state.mostReceivingAtOnce = Math.max(state.mostReceivingAtOnce, state.receiving)
  const chunks: Buffer[] = []
  stream.on('data', (chunk: Buffer) => {
    state.dataBytes += chunk.length
    chunks.push(chunk)
  })
  stream.on('end', () => {
    const { dataDelayMs, dropAfterData } = behaviour
    const rejectData = stream.sizeExceeded
      ? { code: 552, message: tooBig(state.size).message }
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
      state.receiving--
      state.dropped.push(received())
      // smtp-server keeps its sessions in `connections`; the session's id is the connection's.
      const sessions = (server as unknown as { connections: Set<{ id: string; _socket: Socket }> })
        .connections
      for (const connection of sessions) if (connection.id === session.id) connection._socket.destroy()
      return
    }
    setTimeout(() => {
      state.receiving--
      if (rejectData) return callback(smtpError(rejectData.code, rejectData.message))
      state.messages.push(received())
      for (const wake of state.waiters) wake()
      callback(null, `2.0.0 Ok: queued as ${randomBytes(6).toString('hex')}`)
    }, dataDelayMs)
  })
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
