import { z } from 'zod'
import { AppError, invalidInput, type ValidationIssue } from '../errors.ts'

/** The email request as the generated validator lets it through. */
export interface EmailRequestBody {
  from?: string
  to: string | string[]
  cc?: string | string[]
  bcc?: string | string[]
  subject: string
  text_body?: string
  html_body?: string
}

/** The same request with every recipient list split, trimmed and checked. */
export interface EmailRequest {
  from?: string
  to: string[]
  cc: string[]
  bcc: string[]
  subject: string
  text_body?: string
  html_body?: string
}

export const MAX_RECIPIENTS_PER_SEND = 10

const address = z.email()
const FIELDS = ['to', 'cc', 'bcc'] as const

/**
 * Splits the comma-separated string form of `to`, `cc` and `bcc` and checks every address, with
 * the validation body for a bad one; then applies the per-request recipient limit, if any.
 */
export function normalizeEmailRequest(body: EmailRequestBody, maxRecipients?: number): EmailRequest {
  const issues: ValidationIssue[] = []
  const lists = Object.fromEntries(
    FIELDS.map((field) => [field, recipientsOf(field, body[field], issues)]),
  ) as Record<(typeof FIELDS)[number], string[]>
  if (lists.to.length === 0 && !issues.some((issue) => issue.path[0] === 'to')) {
    issues.push({ path: ['to'], message: 'At least one recipient is required', code: 'too_small' })
  }
  if (issues.length) throw invalidInput(issues)
  const total = lists.to.length + lists.cc.length + lists.bcc.length
  if (maxRecipients !== undefined && total > maxRecipients) {
    throw new AppError(
      'TOO_MANY_RECIPIENTS',
      `A request may have at most ${maxRecipients} recipients across to, cc and bcc; this one has ${total}`,
      { details: { limit: maxRecipients, used: total } },
    )
  }
  return {
    ...(body.from === undefined ? {} : { from: body.from }),
    ...lists,
    subject: body.subject,
    ...(body.text_body === undefined ? {} : { text_body: body.text_body }),
    ...(body.html_body === undefined ? {} : { html_body: body.html_body }),
  }
}

function recipientsOf(
  field: string,
  value: string | string[] | undefined,
  issues: ValidationIssue[],
): string[] {
  if (value === undefined) return []
  const fromString = typeof value === 'string'
  // Only spaces and tabs are trimmed: an address carrying CR or LF is refused, never cleaned up.
  const addresses = fromString ? value.split(',').map((part) => part.replace(/^[ \t]+|[ \t]+$/g, '')) : value
  if (fromString && addresses.length === 1 && addresses[0] === '') return []
  addresses.forEach((candidate, index) => {
    if (!address.safeParse(candidate).success) {
      issues.push({
        path: fromString ? [field] : [field, index],
        message:
          candidate === '' ? 'Empty address in the recipient list' : `Invalid email address: ${candidate}`,
        code: 'invalid_format',
      })
    }
  })
  return addresses
}
