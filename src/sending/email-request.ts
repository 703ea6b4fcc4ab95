import { AppError, invalidInput, type ValidationIssue } from '../app-error.ts'
import type { Tag } from '../db/outbox-types.ts'
import { addressesOf } from './address-list.ts'
import { type ExtrasBody, type MessageExtras, messageExtras } from './message-extras.ts'
import { checkedTags } from './tags.ts'

/** The email request as the generated validator lets it through. */
export interface EmailRequestBody extends ExtrasBody {
  from?: string
  to: string | string[]
  cc?: string | string[]
  bcc?: string | string[]
  subject: string
  text_body?: string
  html_body?: string
  tags?: Tag[] | undefined
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
  /** Only when the request gives reply_to, headers or attachments. */
  extras?: MessageExtras
  /** Only when the request gives some. */
  tags?: Tag[]
}

const MAX_RECIPIENTS_PER_SEND = 10

const FIELDS = ['to', 'cc', 'bcc'] as const

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
 * the validation body for a bad one (counted beforehand by checkRecipientCount), and the reply-to,
 * extra headers and attachments (message-extras.ts), and that no tag name is repeated.
 */
export async function normalizeEmailRequest(body: EmailRequestBody): Promise<EmailRequest> {
  const issues: ValidationIssue[] = []
  const lists = Object.fromEntries(
    FIELDS.map((field) => [field, addressesOf(field, body[field], issues)]),
  ) as Record<(typeof FIELDS)[number], string[]>
  if (lists.to.length === 0 && !issues.some((issue) => issue.path[0] === 'to')) {
    issues.push({ path: ['to'], message: 'At least one recipient is required', code: 'too_small' })
  }
  const extras = givesExtras(body) ? await messageExtras(body, issues) : undefined
  const tags = checkedTags(body.tags ?? [], issues)
  if (issues.length) throw invalidInput(issues)
  return {
    ...(body.from === undefined ? {} : { from: body.from }),
    ...lists,
    subject: body.subject,
    ...(body.text_body === undefined ? {} : { text_body: body.text_body }),
    ...(body.html_body === undefined ? {} : { html_body: body.html_body }),
    ...(extras === undefined || carriesNothing(extras) ? {} : { extras }),
    ...(tags.length === 0 ? {} : { tags }),
  }
}

/** Fields given empty (`[]`, `{}`) carry nothing: the email goes as one without them would. */
function carriesNothing(extras: MessageExtras): boolean {
  return (
    extras.replyTo.length === 0 && Object.keys(extras.headers).length === 0 && extras.attachments.length === 0
  )
}

/** Whether a body gives any of the fields an email may carry since contract 1.2.0. */
export function givesExtras(body: ExtrasBody): boolean {
  return body.reply_to !== undefined || body.headers !== undefined || body.attachments !== undefined
}
