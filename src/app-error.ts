import type { ZodError, z } from 'zod'
import { ERROR_CATALOG, type ErrorCatalogEntry, type ErrorCode } from './generated/errors.ts'
import type { ErrorDetailsSchema, ValidationIssueSchema } from './generated/routes.ts'

export type { ErrorCode }
export type ErrorDetails = z.infer<typeof ErrorDetailsSchema>
export type ValidationIssue = z.infer<typeof ValidationIssueSchema>

export interface AppErrorOptions {
  details?: ErrorDetails
  /** The validation issues of a VALIDATION_ERROR. */
  issues?: ValidationIssue[]
  /** How long until the same request could succeed: a limit's wait (see quota/limit-reached.ts). */
  waitMs?: number
  cause?: unknown
}

/**
 * The one error Mailroom raises for a refusal, by a code of the error catalog
 * (openapi/openapi.yaml, x-error-catalog). It says what went wrong and nothing of how to say
 * it: each entry point renders it its own way (the HTTP layer the specification's body shape,
 * status and Retry-After; the operator command and the dashboard a readable line).
 */
export class AppError extends Error {
  override name = 'AppError'
  readonly details: ErrorDetails | undefined
  readonly issues: ValidationIssue[] | undefined
  readonly waitMs: number | undefined

  constructor(
    readonly code: ErrorCode,
    /** Human text; a simple error's defaults to its fixed text. */
    message?: string,
    options: AppErrorOptions = {},
  ) {
    const entry: ErrorCatalogEntry = ERROR_CATALOG[code]
    super(message ?? entry.error ?? code, options.cause === undefined ? {} : { cause: options.cause })
    this.details = options.details
    this.issues = options.issues
    this.waitMs = options.waitMs
  }
}

/** The specification's validation failure, for rules checked outside the generated validators. */
export function invalidInput(issues: ValidationIssue[]): AppError {
  return new AppError('VALIDATION_ERROR', describeIssues(issues), { issues })
}

/**
 * zod 4 keeps `issues` off its JSON form; the specification's body lists them, so build it.
 * `message` words an issue (zod's own message unless told otherwise).
 */
export function zodIssues(
  error: ZodError,
  message: (issue: ZodError['issues'][number]) => string = (issue) => issue.message,
): ValidationIssue[] {
  return error.issues.map((issue) => ({
    path: issue.path.map((part) => (typeof part === 'number' ? part : String(part))),
    message: message(issue),
    code: issue.code,
  }))
}

/** One readable line: what the operator command prints and the dashboard shows. */
function describeIssues(issues: ValidationIssue[]): string {
  return issues.map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`).join('; ')
}
