/**
 * The one error type of the SDK: every non-2xx answer of the API becomes a `MailroomError`.
 *
 * The API answers errors in three body shapes (see the specification's "Errors" section):
 * - standard `{ code, message, details? }`: `code` is taken as is;
 * - simple `{ error }` (authentication failures, some audience and template checks): the SDK
 *   derives a stable code from the status and the text (`UNAUTHORIZED`, `ACCESS_DENIED`, ...);
 * - validation `{ success: false, error: { name: 'ZodError', issues } }`: `VALIDATION_ERROR`.
 * Anything else (an empty body, HTML from a proxy, ...) gets `HTTP_<status>`.
 */
import type { components } from './generated/schema.js'

type Schemas = components['schemas']

export type ErrorDetails = Schemas['ErrorDetails']
export type ValidationIssue = Schemas['ValidationIssue']
export type StandardErrorBody = Schemas['StandardError']
export type SimpleErrorBody = Schemas['SimpleError']
export type ValidationErrorBody = Schemas['ValidationError']
export type TemplateLimitErrorBody = Schemas['TemplateLimitError']

/** Codes the API sends in standard error bodies. */
export const API_ERROR_CODES = [
  'INVALID_JSON',
  'INVALID_ID',
  'TOO_MANY_RECIPIENTS',
  'BATCH_TOO_LARGE',
  'IDEMPOTENCY_KEY_IN_FLIGHT',
  'INVALID_STATUS',
  'NO_CONNECTION',
  'CONNECTION_NOT_FOUND',
  'CONNECTION_SCOPE_MISMATCH',
  'CONNECTION_PAUSED',
  'FEATURE_NOT_AVAILABLE',
  'BATCH_NOT_FOUND',
  'RESOURCE_NOT_FOUND',
  'NOT_FOUND',
  'PAYLOAD_TOO_LARGE',
  'RATE_LIMITED',
  'QUOTA_EXCEEDED',
  'DAILY_LIMIT_REACHED',
  'INTERNAL_ERROR',
] as const

/** Codes the SDK derives for bodies that carry no `code` (besides `HTTP_<status>`). */
export const DERIVED_ERROR_CODES = [
  'UNAUTHORIZED',
  'ACCESS_DENIED',
  'TEMPLATE_LIMIT_REACHED',
  'NOT_FOUND',
  'VALIDATION_ERROR',
  'INVALID_AUDIENCE',
  'AUDIENCE_HAS_NO_MEMBERS',
] as const

/**
 * Every code a `MailroomError` can carry: the API's codes, the SDK's derived ones, and
 * `HTTP_<status>` for a body of unknown shape. `switch (err.code)` completes these.
 */
export type MailroomErrorCode =
  | (typeof API_ERROR_CODES)[number]
  | (typeof DERIVED_ERROR_CODES)[number]
  | `HTTP_${number}`

export interface MailroomErrorInit {
  /** HTTP status of the answer. */
  status: number
  /** The parsed body as received (JSON value, text, or `undefined` when empty). */
  body: unknown
  /** Response headers (used for `Retry-After`). */
  headers?: Headers
  /** Method and URL of the request, for the message. */
  method?: string
  url?: string
}

/** A non-2xx answer of the Mailroom API. */
export class MailroomError extends Error {
  override readonly name = 'MailroomError'
  /** HTTP status. */
  readonly status: number
  /**
   * The body's `code`, or a code derived by the SDK for simple, validation and unknown bodies.
   * A code the API adds later comes through as is (hence the open string type).
   */
  readonly code: MailroomErrorCode | (string & {})
  /**
   * The standard body's `details`. For the template limit body the SDK also copies its `limit`,
   * `used` and `upgradeRequired` here.
   */
  readonly details: ErrorDetails | undefined
  /** Validation issues (`VALIDATION_ERROR`). */
  readonly issues: ValidationIssue[] | undefined
  /** Seconds to wait before retrying: `details.retryAfter`, else the `Retry-After` header. */
  readonly retryAfter: number | undefined
  /** The parsed body as received. */
  readonly body: unknown
  /** Method of the failed request, when known. */
  readonly method: string | undefined
  /** URL of the failed request, when known. */
  readonly url: string | undefined

  constructor(init: MailroomErrorInit) {
    const { status, body } = init
    const parsed = interpret(status, body)
    super(parsed.message)
    this.status = status
    this.code = parsed.code
    this.details = parsed.details
    this.issues = parsed.issues
    this.retryAfter = parsed.details?.retryAfter ?? parseRetryAfter(init.headers?.get('retry-after') ?? null)
    this.body = body
    this.method = init.method
    this.url = init.url
  }

  /** Builds the error from a fetch `Response` whose body was already read and parsed. */
  static fromResponse(response: Response, body: unknown, request?: Request): MailroomError {
    return new MailroomError({
      status: response.status,
      body,
      headers: response.headers,
      method: request?.method,
      url: request?.url ?? (response.url || undefined),
    })
  }
}

/** `true` for a `MailroomError`, also one thrown by another copy of the SDK. */
export function isMailroomError(error: unknown): error is MailroomError {
  if (error instanceof MailroomError) return true
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { name?: unknown }).name === 'MailroomError' &&
    typeof (error as { status?: unknown }).status === 'number' &&
    typeof (error as { code?: unknown }).code === 'string'
  )
}

interface Interpreted {
  code: string
  message: string
  details?: ErrorDetails
  issues?: ValidationIssue[]
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function isValidationBody(body: Record<string, unknown>): body is ValidationErrorBody {
  return body.success === false && isRecord(body.error) && Array.isArray(body.error.issues)
}

function normalize(text: string): string {
  return text.trim().replace(/\.$/, '').toLowerCase()
}

/** Code for a simple `{ error }` body (or a body without any known shape: `text` undefined). */
function derivedCode(status: number, body: Record<string, unknown> | undefined): string {
  const text = typeof body?.error === 'string' ? normalize(body.error) : undefined
  if (status === 401) return 'UNAUTHORIZED'
  if (text === undefined) return `HTTP_${status}`
  if (status === 403 && text === 'access denied') return 'ACCESS_DENIED'
  if (status === 403 && (text === 'template limit reached' || 'limit' in (body ?? {}))) {
    return 'TEMPLATE_LIMIT_REACHED'
  }
  if (status === 404) return 'NOT_FOUND'
  if (status === 400 && text === 'invalid audience') return 'INVALID_AUDIENCE'
  if (status === 400 && text === 'audience has no members') return 'AUDIENCE_HAS_NO_MEMBERS'
  return `HTTP_${status}`
}

function fallbackMessage(status: number, body: unknown): string {
  if (typeof body === 'string' && body.trim() !== '' && body.length <= 200)
    return `HTTP ${status}: ${body.trim()}`
  return `HTTP ${status}`
}

function interpret(status: number, body: unknown): Interpreted {
  if (!isRecord(body)) return { code: derivedCode(status, undefined), message: fallbackMessage(status, body) }

  // Standard body.
  if (typeof body.code === 'string' && body.code !== '') {
    const message = typeof body.message === 'string' ? body.message : fallbackMessage(status, undefined)
    const details = isRecord(body.details) ? (body.details as ErrorDetails) : undefined
    return details ? { code: body.code, message, details } : { code: body.code, message }
  }

  // Validation body.
  if (isValidationBody(body)) {
    const issues = body.error.issues
    const summary = issues
      .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : 'body'}: ${issue.message}`)
      .join('; ')
    return {
      code: 'VALIDATION_ERROR',
      message: summary ? `Validation failed: ${summary}` : 'Validation failed',
      issues,
    }
  }

  // Simple body (the template limit body also carries `limit`, `used`, `upgradeRequired`, `message`).
  if (typeof body.error === 'string') {
    const code = derivedCode(status, body)
    const message = typeof body.message === 'string' && body.message !== '' ? body.message : body.error
    if (code === 'TEMPLATE_LIMIT_REACHED') {
      const details: ErrorDetails = {}
      if (typeof body.limit === 'number') details.limit = body.limit
      if (typeof body.used === 'number') details.used = body.used
      if (typeof body.upgradeRequired === 'boolean') details.upgradeRequired = body.upgradeRequired
      return { code, message, details }
    }
    return { code, message }
  }

  return { code: derivedCode(status, undefined), message: fallbackMessage(status, undefined) }
}

/** `Retry-After` is either delay-seconds or an HTTP date. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined
  const trimmed = value.trim()
  if (trimmed === '') return undefined
  if (/^\d+$/.test(trimmed)) return Number(trimmed)
  const date = Date.parse(trimmed)
  if (Number.isNaN(date)) return undefined
  return Math.max(0, Math.ceil((date - now) / 1000))
}
