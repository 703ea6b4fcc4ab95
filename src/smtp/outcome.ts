import { domainToASCII } from 'node:url'
import {
  isAuthFailure,
  isLineTooLong,
  isQuotaReply,
  isRefusedUnsent,
  isTlsFailure,
  responseCodeOf,
  smtpReason,
} from './transport.ts'

/**
 * What one SMTP attempt did, recipient by recipient, and whether its failure speaks for the
 * whole connection. Read from the server's replies themselves: nodemailer's summary of a
 * refusal (the first temporary one when every recipient was refused) would read a mix of 550
 * and 450 as a deferral of them all.
 */

export type RecipientStatus = 'accepted' | 'refused' | 'deferred' | 'suppressed' | 'bounced' | 'complained'

export interface RecipientOutcome {
  address: string
  /**
   * accepted; refused for good (5xx); deferred (4xx: try again later); suppressed: on the
   * account's suppression list, never handed to the server; bounced or complained: accepted,
   * then a report read from the connection's mailbox said so (never an SMTP outcome).
   */
  status: RecipientStatus
  /** The server's reply for this recipient, or what kept it from one. */
  reply: string | null
}

export interface AttemptOutcome {
  recipients: RecipientOutcome[]
  /**
   * The provider asked the whole connection to back off (isPushBack; docs/decisions.md, "Quota,
   * daily limit and pacing"). Its reply.
   */
  pushback?: string
  /** No session could be had (an unreachable server, failed TLS, a refused login). Nothing was tried. */
  unreachable?: string
  /** The server's reply to the message, when it took it. */
  reply?: string
  /**
   * The whole message was refused at once, not recipient by recipient: the command refused
   * (`MAIL FROM`, `DATA`), or `message` when it was refused before it was sent.
   */
  refusedAt?: string
}

export function delivered(outcome: AttemptOutcome): boolean {
  return outcome.recipients.some((r) => r.status === 'accepted')
}

/** What nodemailer resolves with when the server took the message. */
export interface SentInfo {
  accepted?: unknown[] | undefined
  rejectedErrors?: unknown[] | undefined
  response?: unknown
}

/**
 * The server took the message, so every recipient it did not refuse at RCPT got it; the
 * refused ones each have their reply.
 */
export function outcomeOfSent(recipients: string[], info: SentInfo): AttemptOutcome {
  const refusals = refusalsByAddress(info.rejectedErrors)
  const outcome: AttemptOutcome = {
    recipients: recipients.map((address) => {
      const refusal = refusals.get(comparable(address))
      return refusal ? { ...refusal, address } : { address, status: 'accepted', reply: null }
    }),
    ...(typeof info.response === 'string' ? { reply: smtpReason({ response: info.response }) } : {}),
  }
  return withPushback(outcome, info.rejectedErrors)
}

/** The attempt failed as a whole: who it failed for, and whether the connection is at fault. */
export function outcomeOfError(recipients: string[], error: unknown): AttemptOutcome {
  const reason = smtpReason(error)
  const code = responseCodeOf(error)
  const stage = commandOf(error)
  const all = (status: RecipientStatus, reply: string): RecipientOutcome[] =>
    recipients.map((address) => ({ address, status, reply }))
  // Larger than the server takes: refused for good before a byte of it was sent.
  if (isRefusedUnsent(error)) return { recipients: all('refused', reason), refusedAt: 'message' }
  if (code === undefined || isAuthFailure(error) || isTlsFailure(error)) {
    // No reply to the message at all: the server could not be reached, or would not let us in
    // (a refused STARTTLS speaks of the session, never of the message, whatever its code).
    return { recipients: all('deferred', reason), unreachable: reason }
  }
  if (stage === 'RCPT TO') {
    // Every recipient refused, each with a reply of its own.
    const refusals = refusalsByAddress(fieldOf(error, 'rejectedErrors'))
    const outcome = {
      recipients: recipients.map(
        (address) => refusals.get(address.toLowerCase()) ?? refusalOf(address, error),
      ),
    }
    return withPushback(outcome, fieldOf(error, 'rejectedErrors'))
  }
  if (isLineTooLong(reason)) return { recipients: all('refused', reason), refusedAt: stage ?? 'message' }
  if (isPushBack({ code, text: reason, command: stage }))
    return { recipients: all('deferred', reason), pushback: reason }
  // The sender or the message itself refused: every recipient alike.
  return { recipients: all(code < 500 ? 'deferred' : 'refused', reason), refusedAt: stage ?? 'message' }
}

/** A server's reply to a command: its code, its text, and the command it answered (if known). */
export interface SmtpReply {
  code: number
  text: string
  command?: string | undefined
}

/**
 * Whether a reply is push-back: the provider asking the whole connection to back off, rather
 * than refusing or deferring this message or one recipient. A 421 at any stage, or a provider's
 * quota reply whatever its code (Gmail's 550 5.4.5: it clears by itself); any other temporary
 * reply only to MAIL FROM or to the message (DATA), since at RCPT a 450, 451 or 452 defers that
 * recipient alone. Never a refused over-long command line, which speaks of this message alone
 * (an SMTP server may close with 421 on it).
 */
export function isPushBack({ code, text, command }: SmtpReply): boolean {
  if (isLineTooLong(text)) return false
  if (code === 421 || isQuotaReply(code, text)) return true
  return code < 500 && (command === 'MAIL FROM' || command === 'DATA')
}

/** A refusal at RCPT that speaks for the connection makes the attempt push-back. */
function withPushback(outcome: AttemptOutcome, rejectedErrors: unknown): AttemptOutcome {
  const errors = Array.isArray(rejectedErrors) ? rejectedErrors : []
  const connectionWide = errors.find((e) => {
    const code = responseCodeOf(e)
    return code !== undefined && isPushBack({ code, text: smtpReason(e), command: 'RCPT TO' })
  })
  return connectionWide === undefined ? outcome : { ...outcome, pushback: smtpReason(connectionWide) }
}

function refusalsByAddress(rejectedErrors: unknown): Map<string, RecipientOutcome> {
  const refusals = new Map<string, RecipientOutcome>()
  for (const error of Array.isArray(rejectedErrors) ? rejectedErrors : []) {
    const address = fieldOf(error, 'recipient')
    if (typeof address === 'string') refusals.set(comparable(address), refusalOf(address, error))
  }
  return refusals
}

/** A recipient's refusal: for good on a 5xx, unless it is a quota reply (it clears by itself). */
function refusalOf(address: string, error: unknown): RecipientOutcome {
  const code = responseCodeOf(error)
  const reply = smtpReason(error)
  const permanent = isLineTooLong(reply) || (code !== undefined && code >= 500 && !isQuotaReply(code, reply))
  return { address, status: permanent ? 'refused' : 'deferred', reply }
}

/** An address as nodemailer reports it back: the domain in punycode, compared case-insensitively. */
function comparable(address: string): string {
  const at = address.lastIndexOf('@')
  const domain = at === -1 ? '' : domainToASCII(address.slice(at + 1)) || address.slice(at + 1)
  return `${address.slice(0, at + 1)}${domain}`.toLowerCase()
}

function commandOf(error: unknown): string | undefined {
  const command = fieldOf(error, 'command')
  return typeof command === 'string' ? command : undefined
}

function fieldOf(error: unknown, name: string): unknown {
  return typeof error === 'object' && error !== null ? (error as Record<string, unknown>)[name] : undefined
}
