import type { AddressInfo } from 'node:net'
import { SMTPServer } from 'smtp-server'
import type { Services } from '../services.ts'
import { type RelayTls, relayTls } from './certificate.ts'
import { type Listener, RelaySessions } from './session.ts'

/** How long a stopping relay lets sessions finish the message they are sending. */
const CLOSE_GRACE_MS = 10_000

export interface RelayOptions {
  /** Defaults to the service's HOST. */
  host?: string
  /** The STARTTLS listener's port (0: any free one; null: off); defaults to MAILROOM_SMTP_PORT. */
  port?: number | null
  /** The implicit TLS listener's port; defaults to MAILROOM_SMTPS_PORT. */
  securePort?: number | null
  /** The certificate; defaults to MAILROOM_SMTP_TLS_CERT/_KEY, else the kept self-signed one. */
  tls?: RelayTls
}

export interface RunningRelay {
  /** The ports bound, null for a listener that is off. */
  ports: Record<Listener, number | null>
  /** The file of the self-signed certificate in use, if it is one. */
  selfSignedFile: string | undefined
  /** Sessions open now. */
  readonly sessions: number
  /** Stops taking sessions, lets those under way finish their message, and closes. */
  stop(): Promise<void>
}

/**
 * The SMTP relay: submission on STARTTLS and implicit TLS listeners, AUTH by API key, each
 * message queued as /enqueue queues it (docs/smtp-relay.md). Nothing is opened when both
 * listeners are off.
 */
export async function startRelay(services: Services, options: RelayOptions = {}): Promise<RunningRelay> {
  const settings = services.config.relay
  const port = options.port === undefined ? settings.port : options.port
  const securePort = options.securePort === undefined ? settings.securePort : options.securePort
  const ports: Record<Listener, number | null> = { smtp: null, smtps: null }
  if (port === null && securePort === null) {
    return { ports, selfSignedFile: undefined, sessions: 0, stop: async () => {} }
  }
  const tls = options.tls ?? (await relayTls(services.config))
  const sessions = new RelaySessions(services)
  const host = options.host ?? services.config.host
  const servers: SMTPServer[] = []
  try {
    for (const [listener, at] of [
      ['smtp', port],
      ['smtps', securePort],
    ] as const) {
      if (at === null) continue
      const server = relayServer(services, sessions, listener, tls)
      servers.push(server)
      ports[listener] = await listen(server, at, host)
    }
  } catch (error) {
    await Promise.all(servers.map(close))
    throw error
  }
  return {
    ports,
    selfSignedFile: tls.selfSignedFile,
    get sessions() {
      return sessions.open
    },
    stop: async () => {
      await Promise.all(servers.map(close))
    },
  }
}

function relayServer(
  services: Services,
  sessions: RelaySessions,
  listener: Listener,
  tls: RelayTls,
): SMTPServer {
  const { config } = services
  return new SMTPServer({
    secure: listener === 'smtps',
    key: tls.key,
    cert: tls.cert,
    name: config.ehloName,
    banner: 'Mailroom SMTP relay',
    authMethods: ['PLAIN', 'LOGIN'],
    // Refused per session instead (RelaySessions.onConnect): clients on this host may AUTH in clear.
    allowInsecureAuth: true,
    size: config.relay.maxBytes,
    // The relay writes each reply's enhanced status code itself (src/relay/replies.ts).
    hideENHANCEDSTATUSCODES: true,
    // The relay queues: it cannot promise delivery status notifications or REQUIRETLS towards
    // the provider, so it does not offer them.
    hideDSN: true,
    hideREQUIRETLS: true,
    disableReverseLookup: true,
    socketTimeout: config.relay.timeoutSeconds * 1000,
    closeTimeout: CLOSE_GRACE_MS,
    // smtp-server's own lines would name the session's user and echo commands; the relay
    // writes its own, without secrets.
    logger: false,
    onConnect: (session, done) => sessions.onConnect(listener, session, done),
    onSecure: (_socket, session, done) => sessions.onSecure(session, done),
    onAuth: (auth, session, done) => sessions.onAuth(auth, session, done),
    onMailFrom: (address, session, done) => sessions.onMailFrom(address, session, done),
    onRcptTo: (address, session, done) => sessions.onRcptTo(address, session, done),
    onData: (stream, session, done) => sessions.onData(stream, session, done),
    onClose: (session) => sessions.onClose(session),
  })
}

function listen(server: SMTPServer, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.server.once('error', reject)
    server.listen(port, host, () => {
      server.server.off('error', reject)
      resolve((server.server.address() as AddressInfo).port)
    })
  })
}

/**
 * Stops listening and ends at once the sessions between messages (a pooled client's idle ones
 * would otherwise hold the shutdown for the whole grace); a session sending a message has the
 * grace to finish it.
 */
function close(server: SMTPServer): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()))
  for (const connection of server.connections) {
    if (connection.session.envelope?.mailFrom) continue
    connection.send(421, 'Server shutting down')
    connection.close()
  }
  return closed
}
