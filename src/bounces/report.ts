import { simpleParser } from 'mailparser'
import { isMailboxGone, isMailboxGoneStatus } from '../smtp/mailbox-gone.ts'
import { complaintOf } from './arf.ts'
import { dsnRecipients } from './dsn.ts'
import { type Report, type ReportedRecipient, type ReportParts, returnedMessageId } from './fields.ts'
import { plainBounce } from './plain-bounces.ts'

export type { Report, ReportedRecipient } from './fields.ts'

/**
 * Reading a message from a connection's mailbox as a bounce or complaint report
 * (docs/suppressions.md, "Reports Mailroom reads"). A report is a complaint (an ARF
 * feedback-report of a complaint type), a delivery status notification naming a recipient that
 * failed or was delayed, or a bounce in one of the common servers' own layouts; anything else is
 * other mail.
 */

/**
 * Only the start of a message is read: the report's parts come before the returned message,
 * which may be as large as anything the owner sends.
 */
const MAX_REPORT_BYTES = 2 * 1024 * 1024
/** How much of the text, and of each report part, the layouts scan. */
const MAX_TEXT_CHARS = 64 * 1024
const MAX_HTML_CHARS = 256 * 1024

const PARSING = {
  keepDeliveryStatus: true,
  skipImageLinks: true,
  skipTextLinks: true,
  skipTextToHtml: true,
  maxHtmlLengthToParse: MAX_HTML_CHARS,
}

/**
 * The text of an HTML part. mailparser turns HTML into text only for a message whose body is
 * HTML, not for an HTML alternative without its plain one (as some reports come), so the HTML is
 * handed to it as such a message.
 */
async function textOfHtml(html: string): Promise<string> {
  const message = `Content-Type: text/html; charset=utf-8\r\n\r\n${html.slice(0, MAX_HTML_CHARS)}`
  return (await simpleParser(Buffer.from(message, 'utf8'), PARSING)).text ?? ''
}

async function partsOf(raw: Buffer): Promise<ReportParts> {
  const head = raw.subarray(0, MAX_REPORT_BYTES)
  const parsed = await simpleParser(head, PARSING)
  const text = parsed.text ?? (typeof parsed.html === 'string' ? await textOfHtml(parsed.html) : '')
  return {
    subject: parsed.subject ?? '',
    from: parsed.from?.text ?? '',
    text: text.slice(0, MAX_TEXT_CHARS).replace(/\r\n?/g, '\n'),
    parts: parsed.attachments.map((part) => ({
      contentType: part.contentType.toLowerCase(),
      content: part.content.subarray(0, MAX_TEXT_CHARS).toString('utf8'),
    })),
    raw: head.subarray(0, MAX_TEXT_CHARS).toString('latin1'),
    ownMessageId: parsed.messageId ?? null,
  }
}

/** The report a message is: a complaint, else its delivery-status part, else its text's layout. */
function reportOf(message: ReportParts): Report | null {
  const complaint = complaintOf(message)
  if (complaint !== null) {
    const { feedbackType, recipients } = complaint
    return {
      kind: 'complaint',
      format: 'arf',
      messageId: returnedMessageId(message),
      recipients,
      feedbackType,
    }
  }
  // A delivery-status part decides alone: its text may be a notice of success in a bounce's words.
  const dsn = dsnRecipients(message)
  const read = dsn === null ? plainBounce(message) : { format: 'dsn' as const, recipients: dsn }
  if (read === null || read.recipients.length === 0) return null
  return {
    kind: 'bounce',
    format: read.format,
    messageId: returnedMessageId(message),
    recipients: read.recipients,
  }
}

/** Reads a raw message from the mailbox; null when it is no bounce or complaint report (other mail). */
export async function readReport(raw: Buffer): Promise<Report | null> {
  try {
    return reportOf(await partsOf(raw))
  } catch {
    // A message mailparser cannot read is no report Mailroom can act on: it is other mail.
    return null
  }
}

/** A status that names no particular cause (`5.0.0`): the reply quoted with it says more. */
const GENERIC_STATUS = /^[245]\.0\.0$/

/**
 * Whether the recipient's mailbox is gone for good (hard bounce): it failed, with a status of the
 * mailbox-gone list, or, when the status names no cause, a reply src/smtp/mailbox-gone.ts counts
 * (an enhanced code of that list, or a bare 5xx whose text says the mailbox does not exist).
 */
export function isHardBounce(recipient: ReportedRecipient): boolean {
  if (recipient.action !== 'failed') return false
  const { status, diagnostic } = recipient
  if (status !== null && !GENERIC_STATUS.test(status)) return isMailboxGoneStatus(status)
  return diagnostic !== null && isMailboxGone(diagnostic)
}
