/**
 * The SDK's two error types:
 * - `MailroomError`: the API answered with a non-2xx status;
 * - `MailroomNetworkError`: no answer at all (connection refused or reset, or the request's
 *   timeout ran out).
 *
 * The API answers errors in the body shapes of its error catalog (`x-error-catalog` in
 * openapi/openapi.yaml, generated into `./generated/errors.ts`). Codes come from that catalog
 * alone, never from the server's prose:
 * - standard `{ code, message, details? }`: `code` is taken as is;
 * - validation `{ success: false, error: { name: 'ZodError', issues } }`: the catalog's
 *   validation code (`VALIDATION_ERROR`), with `issues`;
 * - template limit `{ error, limit, used, upgradeRequired, message }`: the catalog's
 *   template-limit code for that status (`TEMPLATE_LIMIT_REACHED`), with `details`;
 * - simple `{ error }`: the catalog code whose status and fixed text are exactly these;
 * - anything else (an unknown text, an empty body, HTML from a proxy): `HTTP_<status>`.
 */
import { API_ERRORS, type ApiErrorCode, type ErrorBodyShape } from './generated/errors.js'
import type { components } from './generated/schema.js'

type Schemas = components['schemas']

export type ErrorDetails = Schemas['ErrorDetails']
export type ValidationIssue = Schemas['ValidationIssue']
export type StandardErrorBody = Schemas['StandardError']
export type SimpleErrorBody = Schemas['SimpleError']
export type ValidationErrorBody = Schemas['ValidationError']
export type TemplateLimitErrorBody = Schemas['TemplateLimitError']

export { API_ERRORS, type ApiErrorCode, type ErrorBodyShape }

/** The code of every error the API answers, in the catalog's order. */
export const API_ERROR_CODES = Object.keys(API_ERRORS) as readonly ApiErrorCode[]

/**
 * Every code a `MailroomError` can carry: the catalog's codes, and `HTTP_<status>` for a body
 * the catalog does not describe. `switch (err.code)` completes these.
 */
export type MailroomErrorCode = ApiErrorCode | `HTTP_${number}`

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
  /** The `Idempotency-Key` the request carried (the caller's, or the one the SDK made). */
  idempotencyKey?: string
}

/** A non-2xx answer of the Mailroom API. */
export class MailroomError extends Error {
  override readonly name = 'MailroomError'
  /** HTTP status. */
  readonly status: number
  /**
   * The body's `code`, or the catalog's code for a validation, template-limit or simple body,
   * or `HTTP_<status>`. A code the API adds later comes through as is (hence the open type).
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
  /**
   * The `Idempotency-Key` the request carried. When the SDK made it (`send` with `retries`), a
   * later `send` with this key replays the outcome instead of sending again.
   */
  readonly idempotencyKey: string | undefined

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
    this.idempotencyKey = init.idempotencyKey
  }

  /** Builds the error from a fetch `Response` whose body was already read and parsed. */
  static fromResponse(
    response: Response,
    body: unknown,
    request: { method?: string; url?: string; idempotencyKey?: string } = {},
  ): MailroomError {
    return new MailroomError({
      status: response.status,
      body,
      headers: response.headers,
      method: request.method,
      url: request.url ?? (response.url || undefined),
      idempotencyKey: request.idempotencyKey,
    })
  }
}

/** `true` for a `MailroomError`, also one thrown by another copy of the SDK. */
export function isMailroomError(error: unknown): error is MailroomError {
  if (error instanceof MailroomError) return true
  return (
    isRecord(error) &&
    error.name === 'MailroomError' &&
    typeof error.status === 'number' &&
    typeof error.code === 'string'
  )
}

/**
 * `NETWORK_ERROR`: the request got no answer (refused, reset, closed before the response was
 * complete). `TIMEOUT`: the client's `timeoutMs` ran out first.
 */
export type MailroomNetworkErrorCode = 'NETWORK_ERROR' | 'TIMEOUT'

export interface MailroomNetworkErrorInit {
  code: MailroomNetworkErrorCode
  /** Method and path (template) of the operation, e.g. `POST /send`, `GET /batches/{id}`. */
  method: string
  path: string
  /** What fetch threw. */
  cause: unknown
  /** The timeout that ran out (`TIMEOUT`). */
  timeoutMs?: number
  /** The `Idempotency-Key` the request carried. */
  idempotencyKey?: string
}

/**
 * The request got no answer at all, so whether the server acted on it is unknown. `send`
 * retries this itself when `retries` allows (with the same `Idempotency-Key`); for `send`, a
 * later call with `idempotencyKey` replays the outcome. No other operation is retried by the SDK.
 */
export class MailroomNetworkError extends Error {
  override readonly name = 'MailroomNetworkError'
  readonly code: MailroomNetworkErrorCode
  readonly method: string
  readonly path: string
  /** The `Idempotency-Key` the request carried (the caller's, or the one the SDK made). */
  readonly idempotencyKey: string | undefined

  constructor(init: MailroomNetworkErrorInit) {
    const reason =
      init.code === 'TIMEOUT'
        ? `timed out after ${init.timeoutMs} ms`
        : `failed without a response (${reasonOf(init.cause)})`
    super(`${init.method} ${init.path} ${reason}`, { cause: init.cause })
    this.code = init.code
    this.method = init.method
    this.path = init.path
    this.idempotencyKey = init.idempotencyKey
  }
}

/** `true` for a `MailroomNetworkError`, also one thrown by another copy of the SDK. */
export function isMailroomNetworkError(error: unknown): error is MailroomNetworkError {
  if (error instanceof MailroomNetworkError) return true
  return isRecord(error) && error.name === 'MailroomNetworkError' && typeof error.code === 'string'
}

function reasonOf(cause: unknown): string {
  // undici's "fetch failed" says nothing; the socket error behind it does.
  const inner = cause instanceof Error && cause.cause instanceof Error ? cause.cause : cause
  return inner instanceof Error ? inner.message : String(inner)
}

// ------------------------------------------------------------------------------------------------

interface Interpreted {
  code: string
  message: string
  details?: ErrorDetails
  issues?: ValidationIssue[]
}

/**
 * The catalog's codes of the bodies that carry none, by shape and status, and for simple bodies
 * by their exact fixed text. Standard bodies name their code themselves.
 */
const CODES_BY_SHAPE = new Map<string, ApiErrorCode>()
for (const code of API_ERROR_CODES) {
  const entry = API_ERRORS[code]
  if (entry.body === 'standard') continue
  const text = entry.body === 'simple' && 'error' in entry ? entry.error : undefined
  CODES_BY_SHAPE.set(shapeKey(entry.body, entry.status, text), code)
}

function shapeKey(shape: ErrorBodyShape, status: number, text?: string): string {
  return JSON.stringify([shape, status, text ?? null])
}

function catalogCode(shape: ErrorBodyShape, status: number, text?: string): string {
  return CODES_BY_SHAPE.get(shapeKey(shape, status, text)) ?? `HTTP_${status}`
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function isValidationBody(body: Record<string, unknown>): body is ValidationErrorBody {
  return body.success === false && isRecord(body.error) && Array.isArray(body.error.issues)
}

function fallbackMessage(status: number, body: unknown): string {
  if (typeof body === 'string' && body.trim() !== '' && body.length <= 200)
    return `HTTP ${status}: ${body.trim()}`
  return `HTTP ${status}`
}

function interpret(status: number, body: unknown): Interpreted {
  if (!isRecord(body)) return { code: `HTTP_${status}`, message: fallbackMessage(status, body) }

  if (typeof body.code === 'string' && body.code !== '') {
    const message = typeof body.message === 'string' ? body.message : fallbackMessage(status, undefined)
    const details = isRecord(body.details) ? (body.details as ErrorDetails) : undefined
    return details ? { code: body.code, message, details } : { code: body.code, message }
  }

  if (isValidationBody(body)) {
    const issues = body.error.issues
    const summary = issues
      .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : 'body'}: ${issue.message}`)
      .join('; ')
    return {
      code: catalogCode('validation', status),
      message: summary ? `Validation failed: ${summary}` : 'Validation failed',
      issues,
    }
  }

  if (typeof body.error === 'string' && typeof body.limit === 'number') {
    const details: ErrorDetails = { limit: body.limit }
    if (typeof body.used === 'number') details.used = body.used
    if (typeof body.upgradeRequired === 'boolean') details.upgradeRequired = body.upgradeRequired
    const message = typeof body.message === 'string' && body.message !== '' ? body.message : body.error
    return { code: catalogCode('template-limit', status), message, details }
  }

  if (typeof body.error === 'string') {
    return { code: catalogCode('simple', status, body.error), message: body.error }
  }

  return { code: `HTTP_${status}`, message: fallbackMessage(status, undefined) }
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
