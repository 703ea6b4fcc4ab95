import { randomUUID } from 'node:crypto'
import ipaddr from 'ipaddr.js'
import type {
  SMTPServerAddress,
  SMTPServerAuthentication,
  SMTPServerAuthenticationResponse,
  SMTPServerDataStream,
  SMTPServerSession,
} from 'smtp-server'
import type { SendingConnection } from '../db/connections.ts'
import { suppressedForAll } from '../db/suppressions.ts'
import type { Caller } from '../keys/caller.ts'
import { authenticate } from '../keys/keys.ts'
import { withRequestId } from '../log.ts'
import { acceptSubmission, relayConnection } from '../sending/submission.ts'
import type { Services } from '../services.ts'
import { authenticateClient } from './auth.ts'
import { receiveMessage } from './message-buffer.ts'
import { replyFor, SmtpReply } from './replies.ts'

/** The contract's limit of recipients a message; the next one is told to wait for another message. */
const MAX_RECIPIENTS = 100

export type Listener = 'smtp' | 'smtps'

/** What the relay knows of one session beyond smtp-server's own. */
interface SessionState {
  listener: Listener
  /** The API key the session authenticated with, looked up again for each message; never logged. */
  key: string | undefined
  caller: Caller | undefined
  connection: SendingConnection | undefined
  messages: number
}

type Done = (error?: Error | null) => void

/**
 * The relay's handlers for smtp-server: each turns the domain's answer, or its AppError, into
 * the SMTP reply (src/relay/replies.ts). One instance serves both listeners, so that the bound
 * on sessions per client address counts them together.
 */
export class RelaySessions {
  private readonly states = new Map<string, SessionState>()
  private readonly perAddress = new Map<string, number>()

  constructor(private readonly services: Services) {}

  /** Sessions open now (RunningRelay.sessions). */
  get open(): number {
    return this.states.size
  }

  onConnect(listener: Listener, session: SMTPServerSession, done: Done): void {
    const { metrics, log, config } = this.services
    const address = session.remoteAddress
    const held = this.perAddress.get(address) ?? 0
    if (held >= config.relay.sessionsPerAddress) {
      metrics.relaySession(listener, true)
      log.warn(
        { sessionId: session.id, client: address, listener },
        'SMTP relay session refused: too many from this address',
      )
      done(new SmtpReply(421, '4.7.0', 'Too many sessions from your address; try again later'))
      return
    }
    this.perAddress.set(address, held + 1)
    this.states.set(session.id, {
      listener,
      key: undefined,
      caller: undefined,
      connection: undefined,
      messages: 0,
    })
    // AUTH is offered only once the session is encrypted, except to clients on this host.
    if (!session.secure && !isLoopback(address)) session.disabledCommands = ['AUTH']
    metrics.relaySession(listener, false)
    log.info({ sessionId: session.id, client: address, listener }, 'SMTP relay session opened')
    done()
  }

  onSecure(session: SMTPServerSession, done: Done): void {
    delete session.disabledCommands
    done()
  }

  onClose(session: SMTPServerSession): void {
    const state = this.states.get(session.id)
    if (!state) return
    this.states.delete(session.id)
    const address = session.remoteAddress
    const held = (this.perAddress.get(address) ?? 1) - 1
    if (held > 0) this.perAddress.set(address, held)
    else this.perAddress.delete(address)
    this.services.log.info(
      {
        sessionId: session.id,
        client: address,
        listener: state.listener,
        messages: state.messages,
        accountId: state.caller?.accountId,
      },
      'SMTP relay session closed',
    )
  }

  onAuth(
    auth: SMTPServerAuthentication,
    session: SMTPServerSession,
    done: (error: Error | null | undefined, response?: SMTPServerAuthenticationResponse) => void,
  ): void {
    const key = auth.password ?? ''
    authenticateClient(this.services, session.remoteAddress, key).then(
      (caller) => {
        Object.assign(this.state(session), { key, caller })
        this.services.log.info(
          { sessionId: session.id, accountId: caller.accountId, keyId: caller.keyId },
          'SMTP relay client authenticated',
        )
        done(null, { user: caller.keyId })
      },
      (error) => {
        this.services.log.warn(
          { sessionId: session.id, client: session.remoteAddress },
          'SMTP relay AUTH refused',
        )
        done(asReply(error))
      },
    )
  }

  onMailFrom(address: SMTPServerAddress, session: SMTPServerSession, done: Done): void {
    this.startTransaction(this.state(session), address.address).then(
      () => done(),
      (error) => done(asReply(error)),
    )
  }

  /**
   * The caller is looked up again for each message, so that a key revoked, expired or moved to
   * the Free plan during a long session stops sending at its next message.
   */
  private async startTransaction(state: SessionState, from: string): Promise<void> {
    if (state.key === undefined) {
      // Only where AUTH is not offered yet (clear text from another host) does MAIL come first.
      throw new SmtpReply(530, '5.7.0', 'Authentication required: STARTTLS, then AUTH with an API key')
    }
    if (state.messages >= this.services.config.relay.messagesPerSession) {
      throw new SmtpReply(421, '4.7.0', 'Too many messages in this session; reconnect to send more')
    }
    const caller = await authenticate(this.services.sql, state.key)
    if (!caller)
      throw new SmtpReply(535, '5.7.8', 'The API key is no longer valid: it was revoked or has expired')
    state.caller = caller
    state.connection = await relayConnection(this.services, caller, from)
  }

  onRcptTo(address: SMTPServerAddress, session: SMTPServerSession, done: Done): void {
    if (session.envelope.rcptTo.length >= MAX_RECIPIENTS) {
      done(new SmtpReply(452, '4.5.3', `Too many recipients: at most ${MAX_RECIPIENTS} a message`))
      return
    }
    const { caller } = this.transaction(session)
    suppressedForAll(this.services.sql, caller.accountId, [address.address]).then(
      ([suppressed]) =>
        done(
          suppressed
            ? new SmtpReply(550, '5.7.1', `${address.address} is suppressed (${suppressed.reason})`)
            : null,
        ),
      (error) => done(asReply(error)),
    )
  }

  onData(
    stream: SMTPServerDataStream,
    session: SMTPServerSession,
    done: (error?: Error | null, text?: string) => void,
  ) {
    const state = this.state(session)
    state.messages += 1
    const requestId = randomUUID()
    withRequestId(requestId, () => this.receive(stream, session, requestId)).then(
      (text) => done(null, text),
      (error) => done(asReply(error)),
    )
  }

  private async receive(
    stream: SMTPServerDataStream,
    session: SMTPServerSession,
    requestId: string,
  ): Promise<string> {
    const { caller, connection } = this.transaction(session)
    const { metrics, log, config } = this.services
    const fields = { sessionId: session.id, accountId: caller.accountId, connectionId: connection.id }
    const received = await receiveMessage(stream, {
      maxBytes: config.relay.maxBytes,
      accountId: caller.accountId,
      gauge: metrics.relayBufferedBytes,
    }).catch((error) => {
      metrics.relayMessage('abandoned')
      log.warn({ ...fields, err: error }, 'SMTP relay message abandoned before its end')
      throw error
    })
    if (received === 'too_big') {
      metrics.relayMessage('too_big')
      log.info(
        { ...fields, maxBytes: config.relay.maxBytes },
        'SMTP relay message refused: over the size limit',
      )
      throw new SmtpReply(552, '5.3.4', `Message too big: at most ${config.relay.maxBytes} bytes`)
    }
    const envelope = session.envelope
    try {
      const stored = await acceptSubmission(this.services, {
        caller,
        connection,
        mailFrom: envelope.mailFrom ? envelope.mailFrom.address : '',
        recipients: envelope.rcptTo.map((r) => r.address),
        message: received.message,
        smtpUtf8: envelope.smtpUtf8 === true,
        requestId,
      })
      metrics.relayMessage('accepted')
      log.info(
        {
          ...fields,
          emailId: stored.outboxId,
          recipients: envelope.rcptTo.length,
          bytes: received.message.length,
        },
        'SMTP relay message queued',
      )
      return `2.0.0 Queued as email ${stored.outboxId} ${stored.messageId}`
    } catch (error) {
      const reply = asReply(error)
      metrics.relayMessage(reply.responseCode >= 500 ? 'refused' : 'failed')
      log.warn({ ...fields, err: error, reply: reply.responseCode }, 'SMTP relay message not queued')
      throw reply
    } finally {
      received.release()
    }
  }

  /** The caller and connection of the transaction under way: smtp-server takes RCPT and DATA only after MAIL FROM. */
  private transaction(session: SMTPServerSession): { caller: Caller; connection: SendingConnection } {
    const { caller, connection } = this.state(session)
    if (!caller || !connection) throw new Error(`SMTP relay session ${session.id} has no transaction`)
    return { caller, connection }
  }

  private state(session: SMTPServerSession): SessionState {
    const state = this.states.get(session.id)
    if (!state) throw new Error(`SMTP relay session ${session.id} is unknown`)
    return state
  }
}

function asReply(error: unknown): SmtpReply {
  return error instanceof SmtpReply ? error : replyFor(error)
}

function isLoopback(address: string): boolean {
  return ipaddr.isValid(address) && ipaddr.process(address).range() === 'loopback'
}
