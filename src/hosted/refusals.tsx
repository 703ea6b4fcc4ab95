import type { ErrorHandler, NotFoundHandler } from 'hono'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { AppError } from '../app-error.ts'
import { ERROR_CATALOG } from '../generated/errors.ts'
import type { HostedEnv } from './env.ts'
import { hostedPage, wantsJson } from './layout.tsx'

/** A refusal as the public sees it: JSON `{success: false, code, message}` or a short page. */
export const onError: ErrorHandler<HostedEnv> = (error, c) => {
  if (!(error instanceof AppError) || error.code === 'INTERNAL_ERROR') {
    c.get('services').log.error({ err: error, method: c.req.method, path: c.req.path }, 'hosted page failure')
    return answer(c, 500, 'INTERNAL_ERROR', 'Something went wrong. Try again in a moment.')
  }
  const status = ERROR_CATALOG[error.code].status as ContentfulStatusCode
  if (error.details?.retryAfter) c.header('Retry-After', String(error.details.retryAfter))
  if (OWNERS_SETUP.has(error.code)) {
    // Told to the owner's log, not to the visitor: the message names the owner's sending address.
    c.get('services').log.warn(
      { code: error.code, path: c.req.path },
      `hosted page refused: ${error.message}`,
    )
    return answer(c, status, error.code, 'This page cannot take submissions at the moment. Try again later.')
  }
  const message =
    error.code === 'VALIDATION_ERROR' && error.issues?.length
      ? error.issues.map((issue) => issue.message).join('; ')
      : error.message
  return answer(c, status, error.code, message)
}

/** Refusals about how the page's owner set up sending, which a visitor can neither see nor mend. */
const OWNERS_SETUP = new Set(['NO_CONNECTION', 'CONNECTION_NOT_FOUND', 'CONNECTION_PAUSED'])

export const notFound: NotFoundHandler<HostedEnv> = (c) =>
  answer(c, 404, 'NOT_FOUND', 'There is nothing at this address.')

function answer(
  c: Parameters<NotFoundHandler<HostedEnv>>[0],
  status: ContentfulStatusCode,
  code: string,
  message: string,
) {
  if (wantsJson(c)) return c.json({ success: false, code, message }, status)
  const title = status === 404 ? 'Not found' : status >= 500 ? 'Something went wrong' : 'Not sent'
  return hostedPage(c, title, <p>{message}</p>, status)
}
