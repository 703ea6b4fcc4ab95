import { AppError, type ErrorCode } from '../app-error.ts'
import { ERROR_CATALOG } from '../generated/errors.ts'

/**
 * An SMTP reply as smtp-server sends it: `responseCode` and a text that starts with its
 * enhanced status code. The relay writes every enhanced code itself (smtp-server would give a
 * refusal from a handler the generic one of its reply code: 5.1.1 for any 550).
 */
export class SmtpReply extends Error {
  constructor(
    readonly responseCode: number,
    enhanced: string,
    text: string,
  ) {
    super(`${enhanced} ${text}`)
  }
}

/** Connection choices the relay refuses as not allowed for this sender. */
const SENDER_REFUSALS: readonly ErrorCode[] = [
  'CONNECTION_SCOPE_MISMATCH',
  'CONNECTION_NOT_FOUND',
  'NO_CONNECTION',
  'CONNECTION_PAUSED',
  'UNKNOWN_CONNECTION',
  'ACCESS_DENIED',
]

/**
 * The reply for an error the domain raised, with the API's reason as its text. A refusal
 * the client should not retry as is gets a 5xx; a limit's wait or a fault of ours a 4xx, so that
 * the client keeps the message and tries again; anything not an AppError is a fault of ours.
 */
export function replyFor(error: unknown): SmtpReply {
  if (!(error instanceof AppError)) {
    return new SmtpReply(451, '4.3.0', 'Local error: the message was not stored; try again later')
  }
  const text = error.message
  if (error.code === 'FEATURE_NOT_AVAILABLE') return new SmtpReply(550, '5.7.0', text)
  if (SENDER_REFUSALS.includes(error.code)) return new SmtpReply(550, '5.7.1', text)
  if (error.code === 'INVALID_API_KEY' || error.code === 'MISSING_AUTHORIZATION') {
    return new SmtpReply(535, '5.7.8', text)
  }
  if (error.code === 'PAYLOAD_TOO_LARGE') return new SmtpReply(552, '5.3.4', text)
  const status = ERROR_CATALOG[error.code].status
  if (status === 429) return new SmtpReply(451, '4.7.1', text)
  if (status === 400 || status === 422) return new SmtpReply(554, '5.6.0', text)
  if (status === 403 || status === 404) return new SmtpReply(550, '5.7.1', text)
  return new SmtpReply(451, '4.3.0', text)
}
