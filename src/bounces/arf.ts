import {
  addressOf,
  fieldGroups,
  MAX_RECIPIENTS,
  type ReportedRecipient,
  type ReportParts,
  returnedHeaders,
} from './fields.ts'

/**
 * RFC 5965 complaint reports (ARF): the `message/feedback-report` part, and the returned message's
 * headers for the recipient when the report names none.
 */

/**
 * Feedback types that are no complaint about the mail: a recipient saying it is not spam, and an
 * authentication failure report (RFC 6591), which speaks of the sender's domain.
 */
const NOT_COMPLAINTS = new Set(['not-spam', 'auth-failure'])

export interface Complaint {
  feedbackType: string
  recipients: ReportedRecipient[]
}

/** Every address in header values such as `To: Bob <bob@example.org>, carol@example.org`. */
function addressesIn(values: readonly string[]): string[] {
  const found: string[] = []
  for (const value of values) {
    for (const token of value.split(/[\s,;<>]+/)) {
      const address = addressOf(token)
      if (address !== null) found.push(address)
    }
  }
  return found
}

function complainant(email: string): ReportedRecipient {
  return { email, action: null, status: null, diagnostic: null }
}

/**
 * The complaint a feedback-report part makes; null when the message has no such part or its
 * feedback type is no complaint. The recipients are the report's Original-Rcpt-To, else the
 * returned message's To; none when the reporter redacted both.
 */
export function complaintOf(message: ReportParts): Complaint | null {
  const part = message.parts.find((p) => p.contentType === 'message/feedback-report')
  if (part === undefined) return null
  const fields = fieldGroups(part.content)[0] ?? new Map<string, string[]>()
  const feedbackType = fields.get('feedback-type')?.[0]?.split(/[\s;]/, 1)[0]?.toLowerCase() || 'other'
  if (NOT_COMPLAINTS.has(feedbackType)) return null
  const named = addressesIn(fields.get('original-rcpt-to') ?? [])
  const emails = named.length > 0 ? named : addressesIn(returnedHeaders(message)?.get('to') ?? [])
  const recipients = [...new Set(emails)].slice(0, MAX_RECIPIENTS).map(complainant)
  return { feedbackType, recipients }
}
