import type { Hook } from '@hono/zod-openapi'
import type { Context, ErrorHandler, NotFoundHandler } from 'hono'
import { HTTPException } from 'hono/http-exception'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import type { ZodError } from 'zod'
import { ApiError, standardError, type ValidationIssue, validationError } from '../errors.ts'
import type { AppEnv } from './env.ts'

/** zod 4 keeps `issues` off its JSON form; the specification's body lists them, so build it. */
export function issuesOf(error: ZodError): ValidationIssue[] {
  return error.issues.map((issue) => ({
    path: issue.path.map((part) => (typeof part === 'number' ? part : String(part))),
    message: issue.message,
    code: issue.code,
  }))
}

/** Turns a failed request validation into the specification's answer. */
export const validationHook: Hook<unknown, AppEnv, string, unknown> = (result) => {
  if (result.success) return
  if (result.target === 'param') throw standardError(400, 'INVALID_ID', 'The ID in the path must be a number')
  throw validationError(issuesOf(result.error as ZodError))
}

export function sendError(c: Context, error: ApiError) {
  return c.json(error.body, error.status as ContentfulStatusCode, error.headers)
}

export const onError: ErrorHandler<AppEnv> = (error, c) => {
  if (error instanceof ApiError) return sendError(c, error)
  // Hono's JSON validator raises these for a body that does not parse or is not declared as JSON.
  if (error instanceof HTTPException && error.status === 400 && /json/i.test(error.message)) {
    return sendError(c, standardError(400, 'INVALID_JSON', 'The request body is not valid JSON'))
  }
  if (error instanceof HTTPException && error.status === 415) {
    return sendError(
      c,
      standardError(
        400,
        'INVALID_JSON',
        'The request body must be JSON, sent with Content-Type: application/json',
      ),
    )
  }
  if (error instanceof HTTPException && error.status < 500) {
    return sendError(c, standardError(error.status as 400, 'BAD_REQUEST', error.message || 'Bad request'))
  }
  c.get('services')?.log.error({ err: error, method: c.req.method, path: c.req.path }, 'unexpected failure')
  return sendError(c, standardError(500, 'INTERNAL_ERROR', 'An unexpected error occurred'))
}

export const notFound: NotFoundHandler<AppEnv> = (c) =>
  sendError(c, standardError(404, 'NOT_FOUND', `No route for ${c.req.method} ${c.req.path}`))
