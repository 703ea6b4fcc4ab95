import type { ErrorHandler, NotFoundHandler } from 'hono'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { leaveMessage } from '../accounts/sessions.ts'
import { AppError } from '../app-error.ts'
import { ERROR_CATALOG } from '../generated/errors.ts'
import type { DashboardContext, DashboardEnv } from './env.ts'
import { page, plainPage, type Refusal, RefusalNotice } from './layout.tsx'
import { signedIn } from './resource.ts'

/**
 * Another account's resource is as missing as one that never was: the API's 403 `Access
 * denied` for audiences and templates is a 404 here, so that IDs tell nothing.
 */
function isNotFound(error: AppError): boolean {
  return error.code === 'ACCESS_DENIED' || ERROR_CATALOG[error.code].status === 404
}

export function statusOf(error: AppError): ContentfulStatusCode {
  return isNotFound(error) ? 404 : (ERROR_CATALOG[error.code].status as ContentfulStatusCode)
}

function sentence(text: string): string {
  const trimmed = text.trim()
  const capital = trimmed.charAt(0).toUpperCase() + trimmed.slice(1)
  return /[.!?]$/.test(capital) ? capital : `${capital}.`
}

/** What a refusal says to a person: the domain's own message, each problem of a form on its line. */
export function refusalOf(error: AppError): Refusal {
  if (error.code === 'VALIDATION_ERROR' && error.issues?.length) {
    return {
      message: 'Some values are not right:',
      lines: error.issues.map((issue) => {
        const field = issue.path.filter((part) => typeof part === 'string').join(' ')
        return field ? `${field.replaceAll('_', ' ')}: ${issue.message}` : issue.message
      }),
    }
  }
  if (error.code === 'SMTP_LOGIN_FAILED') {
    return { message: `The SMTP server did not accept the login: ${error.message}` }
  }
  return { message: sentence(error.message) }
}

type Again = (refusal: Refusal, status: ContentfulStatusCode) => Response | Promise<Response>

/**
 * A refused action shows its form again with the refusal (and what was typed), through `again`.
 * Not found and cross-site refusals, and anything unforeseen, go on to the error page.
 */
export function refused(error: unknown, again: Again): Response | Promise<Response> {
  if (error instanceof AppError && !isNotFound(error) && error.code !== 'CROSS_SITE_REQUEST') {
    return again(refusalOf(error), statusOf(error))
  }
  throw error
}

/**
 * Runs an action. Done: its message is left for the next page and the browser is sent (303) to
 * `to`. Refused: see `refused`.
 */
export async function act(
  c: DashboardContext,
  to: string,
  work: () => Promise<string>,
  again: Again,
): Promise<Response> {
  let done: string
  try {
    done = await work()
  } catch (error) {
    return refused(error, again)
  }
  const { sql, session } = signedIn(c)
  await leaveMessage(sql, session.id, done)
  return c.redirect(to, 303)
}

function errorPage(c: DashboardContext, title: string, refusal: Refusal, status: ContentfulStatusCode) {
  const content = (
    <>
      <RefusalNotice refusal={refusal} />
      <p>
        <a href="/dashboard">Back to the dashboard</a>
      </p>
    </>
  )
  return c.get('session')
    ? page(c, { title, section: '/dashboard', status }, content)
    : plainPage(c, title, content, status)
}

const NOT_FOUND: Refusal = { message: 'There is nothing at this address on your account.' }

export const onError: ErrorHandler<DashboardEnv> = (error, c) => {
  if (error instanceof AppError && isNotFound(error)) return errorPage(c, 'Not found', NOT_FOUND, 404)
  if (error instanceof AppError && error.code !== 'INTERNAL_ERROR') {
    return errorPage(c, 'Not done', refusalOf(error), statusOf(error))
  }
  c.get('services').log.error({ err: error, method: c.req.method, path: c.req.path }, 'dashboard failure')
  return errorPage(
    c,
    'Something went wrong',
    { message: 'The page could not be shown. Try again in a moment.' },
    500,
  )
}

export const notFound: NotFoundHandler<DashboardEnv> = (c) => errorPage(c, 'Not found', NOT_FOUND, 404)
