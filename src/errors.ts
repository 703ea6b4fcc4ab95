import type { z } from 'zod'
import type { ErrorDetailsSchema, ValidationIssueSchema } from './generated/routes.ts'

/**
 * The one error type of Mailroom. Domain modules throw it with the status and body the
 * specification prescribes; the HTTP layer sends it as is and the operator command prints its
 * message. The specification's body shapes are built by the helpers below.
 */
export type ErrorDetails = z.infer<typeof ErrorDetailsSchema>
export type ValidationIssue = z.infer<typeof ValidationIssueSchema>

export type StandardErrorBody = { code: string; message: string; details?: ErrorDetails }
export type SimpleErrorBody = { error: string }
export type TemplateLimitBody = SimpleErrorBody & {
  limit: number
  used: number
  upgradeRequired: boolean
  message: string
}
export type ValidationErrorBody = { success: false; error: { name: 'ZodError'; issues: ValidationIssue[] } }
export type ErrorBody = StandardErrorBody | SimpleErrorBody | TemplateLimitBody | ValidationErrorBody

export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 429 | 500

export class ApiError extends Error {
  constructor(
    readonly status: ErrorStatus,
    readonly body: ErrorBody,
    readonly headers: Record<string, string> = {},
  ) {
    super(describe(body))
    this.name = 'ApiError'
  }

  get code(): string | undefined {
    return 'code' in this.body ? this.body.code : undefined
  }
}

function describe(body: ErrorBody): string {
  if ('code' in body) return body.message
  if (typeof body.error === 'string') return body.error
  return body.error.issues.map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`).join('; ')
}

export function standardError(
  status: ErrorStatus,
  code: string,
  message: string,
  details?: ErrorDetails,
  headers: Record<string, string> = {},
): ApiError {
  const body: StandardErrorBody = details ? { code, message, details } : { code, message }
  return new ApiError(status, body, headers)
}

export function simpleError(status: ErrorStatus, error: string): ApiError {
  return new ApiError(status, { error })
}

/** The specification's validation body, for rules checked outside the generated validators. */
export function validationError(issues: ValidationIssue[]): ApiError {
  return new ApiError(400, { success: false, error: { name: 'ZodError', issues } })
}

export const ACCESS_DENIED = 'Access denied'
