import { AppError, invalidInput, type ValidationIssue } from '../errors.ts'
import { EmailAddressSchema } from '../generated/routes.ts'

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

const MAX_RECIPIENTS_PER_SEND = 10

const FIELDS = ['to', 'cc', 'bcc'] as const
/** An address quoted back in a message is cut to the longest a valid one can be. */
const QUOTED_ADDRESS = 254

/**
 * The recipients of a body as sent, before any address is checked (count limits come first:
 * docs/decisions.md, "Limits on every request"): more than MAX_RECIPIENTS_PER_SEND across `to`,
 * `cc` and `bcc` is TOO_MANY_RECIPIENTS. The string form counts its comma-separated parts without
 * splitting them; fields of another type are left to validation. Returns the body unchanged.
 */
export function checkRecipientCount(body: unknown): unknown {
  if (typeof body !== 'object' || body === null) return body
  const fields = body as Record<string, unknown>
  let total = 0
  for (const field of FIELDS) total += countOf(fields[field])
  const maxRecipients = MAX_RECIPIENTS_PER_SEND
  if (total > maxRecipients) {
    throw new AppError(
      'TOO_MANY_RECIPIENTS',
      `A request may have at most ${maxRecipients} recipients across to, cc and bcc; this one has ${total}`,
      { details: { limit: maxRecipients, used: total } },
    )
  }
  return body
}

function countOf(value: unknown): number {
  if (Array.isArray(value)) return value.length
  if (typeof value !== 'string' || value.trim() === '') return 0
  let commas = 0
  for (let at = value.indexOf(','); at !== -1; at = value.indexOf(',', at + 1)) commas++
  return commas + 1
}

/**
 * Splits the comma-separated string form of `to`, `cc` and `bcc` and checks every address, with
 * the validation body for a bad one (counted beforehand by checkRecipientCount).
 */
export function normalizeEmailRequest(body: EmailRequestBody): EmailRequest {
  const issues: ValidationIssue[] = []
  const lists = Object.fromEntries(
    FIELDS.map((field) => [field, recipientsOf(field, body[field], issues)]),
  ) as Record<(typeof FIELDS)[number], string[]>
  if (lists.to.length === 0 && !issues.some((issue) => issue.path[0] === 'to')) {
    issues.push({ path: ['to'], message: 'At least one recipient is required', code: 'too_small' })
  }
  if (issues.length) throw invalidInput(issues)
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
    if (!EmailAddressSchema.safeParse(candidate).success) {
      issues.push({
        path: fromString ? [field] : [field, index],
        message:
          candidate === ''
            ? 'Empty address in the recipient list'
            : `Invalid email address: ${candidate.slice(0, QUOTED_ADDRESS)}`,
        code: 'invalid_format',
      })
    }
  })
  return addresses
}
