import {
  addressOf,
  diagnosticOf,
  type FieldGroup,
  field,
  fieldGroups,
  MAX_RECIPIENTS,
  type ReportedRecipient,
  type ReportParts,
  statusIn,
  withoutType,
} from './fields.ts'

/**
 * RFC 3464 delivery status notifications (and RFC 6533's UTF-8 ones): the per-recipient field
 * groups of the `message/delivery-status` part.
 */

const STATUS_PARTS = new Set(['message/delivery-status', 'message/global-delivery-status'])

/** Actions that report a delivery, not a failure: a notice of success is no bounce. */
const DELIVERED = new Set(['delivered', 'relayed', 'expanded'])

const ACTION_OF_CLASS: Readonly<Record<string, string>> = { '2': 'delivered', '4': 'delayed', '5': 'failed' }

/** What the status class says when a recipient group has no Action. */
function actionOfStatus(status: string | null): string | null {
  return status === null ? null : (ACTION_OF_CLASS[status.charAt(0)] ?? null)
}

function recipientOf(group: FieldGroup): ReportedRecipient | null {
  const email = addressOf(field(group, 'final-recipient')) ?? addressOf(field(group, 'original-recipient'))
  if (email === null) return null
  const code = field(group, 'diagnostic-code')
  const diagnostic = diagnosticOf(code === null ? null : withoutType(code))
  const status = statusIn(field(group, 'status')) ?? statusIn(diagnostic)
  const action =
    field(group, 'action')
      ?.split(/[\s(;]/, 1)[0]
      ?.toLowerCase() || actionOfStatus(status)
  return { email, action, status, diagnostic }
}

/**
 * The recipients that failed or were delayed, by the report's delivery-status part (none for a
 * notice of success); null when the message has no such part.
 */
export function dsnRecipients(message: ReportParts): ReportedRecipient[] | null {
  const part = message.parts.find((p) => STATUS_PARTS.has(p.contentType))
  if (part === undefined) return null
  const recipients: ReportedRecipient[] = []
  for (const group of fieldGroups(part.content)) {
    const recipient = recipientOf(group)
    if (recipient === null || DELIVERED.has(recipient.action ?? '')) continue
    recipients.push(recipient)
    if (recipients.length === MAX_RECIPIENTS) break
  }
  return recipients
}
