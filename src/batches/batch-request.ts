import type { z } from 'zod'
import { AppError, invalidInput, type ValidationIssue } from '../app-error.ts'
import type { Tag } from '../db/outbox-types.ts'
import type { BatchRequestSchema } from '../generated/routes.ts'
import { givesExtras } from '../sending/email-request.ts'
import { type MessageExtras, messageExtras } from '../sending/message-extras.ts'
import { firstOfEach } from '../sending/recipients.ts'
import { checkedTags } from '../sending/tags.ts'

export type BatchRequest = z.infer<typeof BatchRequestSchema>

/** `recipients` (after de-duplication) and `emails` hold at most this many. */
const MAX_BATCH_SIZE = 1000

const PAIRS = [
  ['template', 'template_id'],
  ['recipients', 'audience_id'],
] as const

/**
 * The rules the schema cannot say: content is `template` or `template_id`, recipients are
 * `recipients` or `audience_id`, or `emails` carries both alone. Breaking one is a validation
 * failure, with the field at fault in the issue's path.
 */
export function checkBatchMode(body: BatchRequest): void {
  const given = (field: keyof BatchRequest) => body[field] !== undefined
  const issues: ValidationIssue[] = []
  if (given('emails')) {
    for (const field of PAIRS.flat()) {
      if (given(field)) {
        issues.push({
          path: [field],
          message: `\`emails\` carries content and recipients: leave out \`${field}\``,
          code: 'custom',
        })
      }
    }
  } else {
    for (const [first, second] of PAIRS) {
      if (given(first) && given(second)) {
        issues.push({
          path: [second],
          message: `Give \`${first}\` or \`${second}\`, not both`,
          code: 'custom',
        })
      }
      if (!given(first) && !given(second)) {
        const what = first === 'template' ? 'Content' : 'Recipients'
        issues.push({
          path: [],
          message: `${what} missing: give \`${first}\` or \`${second}\` (or \`emails\`)`,
          code: 'custom',
        })
      }
    }
  }
  if (issues.length) throw invalidInput(issues)
}

/**
 * The batch limits on a body as sent, before any address or email is checked (count limits
 * come first: docs/decisions.md, "Limits on every request"): more than MAX_BATCH_SIZE `emails`,
 * or unique `recipients` (strings compared case-insensitively, anything else counted apart), is
 * BATCH_TOO_LARGE.
 * Longer than that with duplicates, `recipients` goes on to validation de-duplicated, so that
 * no more than MAX_BATCH_SIZE addresses are ever checked one by one.
 */
export function checkBatchCounts(body: unknown): unknown {
  if (typeof body !== 'object' || body === null) return body
  const { emails, recipients } = body as Record<string, unknown>
  if (Array.isArray(emails)) checkBatchSize('emails', emails.length)
  if (!Array.isArray(recipients)) return body
  // Anything but a string is a key of its own: counted, never taken for another.
  const unique = firstOfEach(recipients as unknown[], (item) =>
    typeof item === 'string' ? item.toLowerCase() : {},
  )
  checkBatchSize('recipients', unique.length)
  return recipients.length > MAX_BATCH_SIZE ? { ...body, recipients: unique } : body
}

/** 400 BATCH_TOO_LARGE beyond MAX_BATCH_SIZE recipients or emails. */
export function checkBatchSize(field: 'recipients' | 'emails', count: number): void {
  if (count <= MAX_BATCH_SIZE) return
  const what = field === 'recipients' ? 'unique recipients' : 'emails'
  throw new AppError(
    'BATCH_TOO_LARGE',
    `A batch may have at most ${MAX_BATCH_SIZE} ${what}; this one has ${count}`,
    {
      details: { limit: MAX_BATCH_SIZE, used: count },
    },
  )
}

/**
 * The batch's reply-to, extra headers and attachments, for every one of its emails, checked as
 * an email's are; on a batch to an audience, Mailroom sets the List-Unsubscribe headers itself.
 */
export async function batchExtras(body: BatchRequest): Promise<MessageExtras | undefined> {
  if (!givesExtras(body)) return undefined
  const issues: ValidationIssue[] = []
  const extras = await messageExtras(body, issues, { audience: body.audience_id !== undefined })
  if (issues.length) throw invalidInput(issues)
  return extras
}

/** The batch's tags, for every one of its emails; a repeated name is refused as an email's is. */
export function batchTags(body: BatchRequest): Tag[] {
  const issues: ValidationIssue[] = []
  const tags = checkedTags(body.tags ?? [], issues)
  if (issues.length) throw invalidInput(issues)
  return tags
}
