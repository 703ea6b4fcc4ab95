import nodemailer, { type SMTPPoolOptions, type SMTPTransportOptions } from 'nodemailer'
import { type ResolvedSmtpHost, resolveSmtpHost } from './host.ts'

/** Port 465 is implicit TLS; any other (587, 2525) must upgrade with STARTTLS. */
export type SmtpLogin = { host: string; port: number; username: string; password: string }

/**
 * A login that could not be verified; `message` is one line with the server's reason. What a
 * send's replies mean (push-back, refused, out of reach) is read by src/smtp/outcome.ts alone.
 */
export class SmtpLoginError extends Error {
  override name = 'SmtpLoginError'
  constructor(
    /** The server's reply or the connection problem, without the "SMTP login failed" prefix. */
    readonly reason: string,
    readonly responseCode: number | undefined,
    options?: ErrorOptions,
  ) {
    super(`SMTP login failed: ${reason}`, options)
  }
}

// The socket timeout stays above the longest idle time MAILROOM_SMTP_IDLE_MS allows (25 s): it
// would otherwise end an idle session before the pool's QUIT.
const TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 }
// maxRequeues stays at nodemailer's default: the pool only requeues a message none of whose bytes
// were sent (e.g. a 421 on a reused connection), and without it such a 421 is reported as a bare
// "connection closed" instead of the server's reply. No cap on messages per session: nodemailer
// ends a session that reached its cap without QUIT; an idle one it ends with QUIT. Five sessions,
// nodemailer's own default: at full speed one connection keeps them all busy (two capped a
// connection at two messages in flight).
const POOL = { maxConnections: 5, maxMessages: Number.POSITIVE_INFINITY }

/** How a session introduces itself: the EHLO name. */
export interface SessionOptions {
  /** Sent with EHLO; nodemailer's default is the machine's address in brackets. */
  name?: string
}

/**
 * How long a pooled session may sit idle before it is ended with QUIT (MAILROOM_SMTP_IDLE_MS):
 * below the socket timeout, which would otherwise end it first, without a word to the server.
 */
export interface PoolSessionOptions extends SessionOptions {
  pool: true
  idleMs: number
  /** How long a silent socket is waited for, if not TIMEOUTS' (tests only, see ServiceOptions). */
  socketTimeoutMs?: number
}

/**
 * nodemailer options for one login. The socket goes to the address `resolveSmtpHost` checked,
 * while the certificate is verified against the host name the owner gave (`servername`), or
 * against the IP itself when they gave an IP: Node checks `servername`, else `host`.
 */
export function smtpTransportOptions(
  login: SmtpLogin,
  resolved: ResolvedSmtpHost,
  opts: PoolSessionOptions,
): SMTPPoolOptions & { pool: true }
export function smtpTransportOptions(
  login: SmtpLogin,
  resolved: ResolvedSmtpHost,
  opts?: SessionOptions & { pool?: false },
): SMTPTransportOptions
export function smtpTransportOptions(
  login: SmtpLogin,
  resolved: ResolvedSmtpHost,
  opts?: SessionOptions | PoolSessionOptions,
): SMTPTransportOptions | (SMTPPoolOptions & { pool: true })
export function smtpTransportOptions(
  login: SmtpLogin,
  resolved: ResolvedSmtpHost,
  opts: SessionOptions | PoolSessionOptions = {},
): SMTPTransportOptions | (SMTPPoolOptions & { pool: true }) {
  const base: SMTPTransportOptions = {
    host: resolved.address,
    port: login.port,
    secure: login.port === 465,
    // Without requireTLS nodemailer would carry on in clear text when STARTTLS is not offered.
    requireTLS: login.port !== 465,
    tls: {
      ...(resolved.servername === undefined ? {} : { servername: resolved.servername }),
      rejectUnauthorized: true,
      minVersion: 'TLSv1.2',
    },
    auth: { user: login.username, pass: login.password },
    disableFileAccess: true,
    disableUrlAccess: true,
    ...TIMEOUTS,
    ...(opts.name ? { name: opts.name } : {}),
    logger: false,
  }
  if (!('pool' in opts)) return base
  const socket = opts.socketTimeoutMs === undefined ? {} : { socketTimeout: opts.socketTimeoutMs }
  return { ...base, ...socket, pool: true, ...POOL, idleTimeout: opts.idleMs }
}

/**
 * Opens one session with the login (TLS, then AUTH) and closes it. Throws `SmtpHostError` when
 * the host is refused before any connection is tried, `SmtpLoginError` when the server is.
 */
export async function verifySmtpLogin(login: SmtpLogin, allowPrivate: boolean, name?: string): Promise<void> {
  const resolved = await resolveSmtpHost(login.host, allowPrivate)
  const transport = nodemailer.createTransport(
    smtpTransportOptions(login, resolved, { ...(name ? { name } : {}) }),
  )
  try {
    await transport.verify()
  } catch (error) {
    throw new SmtpLoginError(withoutSecret(smtpReason(error), login.password), responseCodeOf(error), {
      cause: error,
    })
  } finally {
    transport.close()
  }
}

type ErrorLike = {
  command?: unknown
  code?: unknown
  originalCode?: unknown
  response?: unknown
  responseCode?: unknown
  message?: unknown
}

function fields(error: unknown): ErrorLike {
  return typeof error === 'object' && error !== null ? (error as ErrorLike) : {}
}

function codesOf(error: unknown): string[] {
  const { code, originalCode } = fields(error)
  return [code, originalCode].filter((c): c is string => typeof c === 'string')
}

function responseOf(error: unknown): string | undefined {
  const { response } = fields(error)
  return typeof response === 'string' && response.trim() ? response : undefined
}

export function responseCodeOf(error: unknown): number | undefined {
  const { responseCode } = fields(error)
  if (typeof responseCode === 'number' && responseCode >= 200 && responseCode < 600) return responseCode
  const match = /^([2-5]\d\d)(?:[ -]|$)/.exec(responseOf(error) ?? '')
  return match ? Number(match[1]) : undefined
}

/** The enhanced status code (RFC 3463) of the reply, e.g. `5.4.5`. */
function enhancedCodeOf(response: string): string | undefined {
  return /^\d{3}[ -]([245]\.\d{1,3}\.\d{1,3})\b/.exec(response)?.[1]
}

/**
 * A new session the server would not let in: a 4xx greeting (`421 4.7.0 too many connections`).
 * Nothing of any message was sent on it.
 */
export function isRefusedAtConnect(error: unknown): boolean {
  const code = responseCodeOf(error)
  return fields(error).command === 'CONN' && code !== undefined && code >= 400 && code < 500
}

/**
 * A message the client refused to send, without a word to the server: larger than the SIZE the
 * server announced (nodemailer's EMESSAGE with no reply). Sending it again changes nothing.
 */
export function isRefusedUnsent(error: unknown): boolean {
  return codesOf(error).includes('EMESSAGE') && responseOf(error) === undefined
}

// Providers report an exhausted sending quota as a permanent reply although it clears by itself.
const QUOTA_TEXT = /quota ?exceeded|sending quota|throttling failure/i

/** A provider's exhausted sending quota (Gmail 550 5.4.5, Microsoft QuotaExceeded, SES throttling). */
export function isQuotaReply(code: number, response: string): boolean {
  return code >= 400 && (enhancedCodeOf(response) === '5.4.5' || QUOTA_TEXT.test(response))
}

/**
 * A server's refusal of one over-long command line (smtp-server's `421 Error: Command line too
 * long`, `500 5.5.2 Line too long`): it speaks of what this message put in the line (an address,
 * say), not of the connection, whatever its code, and sending it again changes nothing.
 */
export function isLineTooLong(response: string): boolean {
  return /\bline too long\b|\btoo long line\b|\bcommand too long\b/i.test(response)
}

const TLS_CODE = /^(ETLS$|EPROTO$|ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_)/
/** No TLS-protected session: a certificate refused, or STARTTLS refused or failed. */
export function isTlsFailure(error: unknown): boolean {
  return codesOf(error).some((c) => TLS_CODE.test(c))
}

/** Authentication refused or impossible; counts toward pausing the connection. */
export function isAuthFailure(error: unknown): boolean {
  const codes = codesOf(error)
  if (codes.includes('EAUTH') || codes.includes('ENOAUTH')) return true
  const code = responseCodeOf(error)
  return code === 530 || code === 534 || code === 535
}

const MAX_REASON = 500

/** The server's reply on one line (e.g. `550 5.1.1 User unknown`), or what kept us from one. */
export function smtpReason(error: unknown): string {
  const response = responseOf(error)
  let reason: string
  if (response) {
    const [first = '', ...rest] = response.split(/\r?\n/).filter((line) => line.trim())
    // Continuation lines repeat the code and enhanced code; keep only their text.
    const tail = rest.map((line) => line.replace(/^\d{3}[ -](?:\d\.\d{1,3}\.\d{1,3} )?/, ''))
    reason = [first.replace(/^(\d{3})-/, '$1 '), ...tail].join(' ')
    if (codesOf(error).includes('ETLS')) reason = `STARTTLS refused: ${reason}`
  } else {
    const { message } = fields(error)
    reason = typeof message === 'string' && message ? message : String(error)
    if (isTlsFailure(error)) {
      // Node lists every name in the certificate, which says nothing more than "not this one".
      reason = reason
        .replace(/^Error initiating TLS - /, '')
        .replace(/( is not in the cert's (?:altnames|list)):.*$/s, '$1')
      reason = `TLS failed: ${reason}`
    }
  }
  reason = reason.replace(/\s+/g, ' ').trim()
  return reason.length > MAX_REASON ? `${reason.slice(0, MAX_REASON)}…` : reason
}

function withoutSecret(text: string, secret: string): string {
  return secret ? text.split(secret).join('[redacted]') : text
}
