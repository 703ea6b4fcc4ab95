/**
 * The one error type of Mailroom. Domain modules throw it with the status and body the
 * specification prescribes; the HTTP layer sends it as is and the operator command prints its
 * message. The three body shapes of the specification are built by the helpers below.
 */
export type ErrorDetails = {
  retryAfter?: number
  resetsAt?: string
  limit?: number
  used?: number
  upgradeRequired?: boolean
  feature?: string
}

export type StandardErrorBody = { code: string; message: string; details?: ErrorDetails }
export type SimpleErrorBody = { error: string }
export type ErrorBody = StandardErrorBody | SimpleErrorBody | (SimpleErrorBody & Record<string, unknown>)

export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 429 | 500 | 501

export class ApiError extends Error {
  constructor(
    readonly status: ErrorStatus,
    readonly body: ErrorBody,
    readonly headers: Record<string, string> = {},
  ) {
    super('message' in body && typeof body.message === 'string' ? body.message : String(body.error))
    this.name = 'ApiError'
  }

  get code(): string | undefined {
    return 'code' in this.body ? this.body.code : undefined
  }
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

export const ACCESS_DENIED = 'Access denied'
