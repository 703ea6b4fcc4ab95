import type { Hook } from '@hono/zod-openapi'
import type { Context, ErrorHandler, NotFoundHandler } from 'hono'
import { HTTPException } from 'hono/http-exception'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import type { ZodError } from 'zod'
import { AppError, invalidInput, type ValidationIssue, zodIssues } from '../app-error.ts'
import { unstorableTextIssues } from '../db/storable-text.ts'
import { ERROR_CATALOG, type ErrorCatalogEntry } from '../generated/errors.ts'
import { interruption } from '../net/request-guard.ts'
import { wholeSeconds } from '../quota/limit-reached.ts'
import type { AppEnv } from './env.ts'

/** A validation body lists at most this many issues (docs/decisions.md, "Limits on every request"). */
export const MAX_REPORTED_ISSUES = 100

/**
 * Turns a request's validation into the specification's answers: a bad path ID is INVALID_ID,
 * any other failure (a path's address among them) the validation body; a valid body that holds text PostgreSQL cannot store
 * is refused too. A route's plan gate runs before this (see feature-gate.ts).
 */
export const validationHook: Hook<unknown, AppEnv, string, unknown> = async (result, c) => {
  if (!result.success) {
    const issues = zodIssues(result.error as ZodError)
    if (result.target === 'param' && issues.every(isOfIdParameter)) {
      throw new AppError('INVALID_ID', 'The ID in the path must be a number')
    }
    throw invalidInput(issues)
  }
  // The body as sent, unknown fields included, was walked where it was read (json-body.ts).
  const unstorable =
    result.target === 'json'
      ? (c.get('unstorable') ?? unstorableTextIssues(await c.req.json()))
      : unstorableTextIssues(result.data)
  if (unstorable.length) throw invalidInput(unstorable)
}

/** `id`, `memberId`: the path parameters that name a row by number. */
function isOfIdParameter(issue: ValidationIssue): boolean {
  return /^(id|[a-z]+Id)$/.test(String(issue.path[0]))
}

export interface ErrorResponse {
  status: ContentfulStatusCode
  body: unknown
  headers: Record<string, string>
}

/**
 * The specification's answer to an error: the catalog gives its status and body shape; every
 * 429 also says when to retry in `Retry-After`. An error the API does not answer (an operator
 * refusal reaching HTTP would be a bug) is an unexpected failure.
 */
export function errorResponse(error: AppError): ErrorResponse | undefined {
  const entry: ErrorCatalogEntry = ERROR_CATALOG[error.code]
  if (!entry.api) return undefined
  const headers: Record<string, string> = {}
  if (entry.status === 429) {
    const waitMs = error.waitMs ?? (error.details?.retryAfter ?? 1) * 1000
    headers['Retry-After'] = String(wholeSeconds(waitMs))
  }
  return { status: entry.status, body: bodyOf(error), headers }
}

function bodyOf(error: AppError): unknown {
  const entry: ErrorCatalogEntry = ERROR_CATALOG[error.code]
  switch (entry.body) {
    case 'validation':
      return {
        success: false,
        error: { name: 'ZodError', issues: (error.issues ?? []).slice(0, MAX_REPORTED_ISSUES) },
      }
    case 'simple':
      return { error: entry.error }
    case 'template-limit':
      return {
        error: entry.error,
        limit: error.details?.limit,
        used: error.details?.used,
        upgradeRequired: error.details?.upgradeRequired,
        message: error.message,
      }
    default:
      return error.details
        ? { code: error.code, message: error.message, details: error.details }
        : { code: error.code, message: error.message }
  }
}

function sendError(c: Context<AppEnv>, error: AppError): Response {
  const response = errorResponse(error)
  if (!response) return unexpected(c, error)
  return c.json(response.body, response.status, response.headers)
}

function unexpected(c: Context<AppEnv>, error: unknown): Response {
  c.get('services')?.log.error({ err: error, method: c.req.method, path: c.req.path }, 'unexpected failure')
  return sendError(c, new AppError('INTERNAL_ERROR', 'An unexpected error occurred'))
}

export const onError: ErrorHandler<AppEnv> = (error, c) => {
  // A body that never arrived whole fails its read: the access log says so (see observe.ts).
  if (interruption(c.env)) return c.body(null, 408)
  if (error instanceof AppError) return sendError(c, error)
  // Hono's JSON validator raises these for a body that does not parse or is not declared as JSON.
  if (error instanceof HTTPException && error.status === 400 && /json/i.test(error.message)) {
    return sendError(c, new AppError('INVALID_JSON', 'The request body is not valid JSON'))
  }
  if (error instanceof HTTPException && error.status === 415) {
    return sendError(
      c,
      new AppError('INVALID_JSON', 'The request body must be JSON, sent with Content-Type: application/json'),
    )
  }
  return unexpected(c, error)
}

export const notFound: NotFoundHandler<AppEnv> = (c) =>
  sendError(c, new AppError('NOT_FOUND', `No route for ${c.req.method} ${c.req.path}`))
