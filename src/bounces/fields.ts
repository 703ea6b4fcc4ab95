/**
 * What a bounce or complaint report says, and the small readers its layouts share: header-style
 * field groups (a delivery-status or feedback-report part, a returned message's headers),
 * addresses, enhanced status codes and Message-IDs.
 */

/** One recipient a report speaks of. */
export interface ReportedRecipient {
  /** Final-Recipient, else Original-Recipient (the address only, no `rfc822;`), lower-cased. */
  email: string
  /** DSN Action (failed, delayed, delivered, relayed, expanded); for a non-standard bounce, 'failed' or 'delayed' as its text says; null when unknown. */
  action: string | null
  /** Enhanced status `X.Y.Z` (DSN Status, or found in the reply text); null when none. */
  status: string | null
  /** Diagnostic-Code without its type (`smtp; `), or the server reply quoted by a non-standard bounce; null when none. */
  diagnostic: string | null
}

export interface Report {
  kind: 'bounce' | 'complaint'
  /** Which layout it was read as. */
  format: 'dsn' | 'arf' | 'postfix' | 'exim' | 'qmail' | 'gmail' | 'microsoft'
  /** The Message-ID of the returned message (from its returned headers), with its angle brackets as sent, e.g. `<abc@host>`; null when the report does not carry it. */
  messageId: string | null
  /** At most MAX_RECIPIENTS; a bounce lists only the recipients that failed or were delayed. */
  recipients: ReportedRecipient[]
  /** ARF Feedback-Type (abuse, fraud, ...); only for complaints. */
  feedbackType?: string
}

/** The parts of a message a layout reads, each already bounded. */
export interface ReportParts {
  subject: string
  from: string
  /** The readable text (text/plain, else the HTML's text), line ends `\n`. */
  text: string
  /** Non-text parts (delivery-status, feedback-report, returned messages), decoded. */
  parts: { contentType: string; content: string }[]
  /** The start of the raw message, for headers no part exposes (an inline returned message). */
  raw: string
  /** The report's own Message-ID, never taken for the returned one. */
  ownMessageId: string | null
}

/** A report naming more recipients than this is read for its first ones only. */
export const MAX_RECIPIENTS = 100
/** How many characters of a diagnostic are kept. */
const MAX_DIAGNOSTIC = 1000

/** A header-style field group: lower-cased names, each with its values in order (folded lines joined). */
export type FieldGroup = Map<string, string[]>

/** Header-style field groups separated by blank lines (RFC 3464 section 2.1, RFC 5965 section 3). */
export function fieldGroups(text: string): FieldGroup[] {
  const groups: FieldGroup[] = []
  let group: FieldGroup | null = null
  let last: { values: string[]; index: number } | null = null
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '') {
      group = null
      last = null
    } else if (/^[ \t]/.test(line) && last !== null) {
      last.values[last.index] = `${last.values[last.index]} ${line.trim()}`
    } else {
      const colon = line.indexOf(':')
      if (colon <= 0) continue
      if (group === null) {
        group = new Map()
        groups.push(group)
      }
      const name = line.slice(0, colon).trim().toLowerCase()
      const values = group.get(name) ?? []
      values.push(line.slice(colon + 1).trim())
      group.set(name, values)
      last = { values, index: values.length - 1 }
    }
  }
  return groups
}

/** The first value of a field, or null. */
export function field(group: FieldGroup, name: string): string | null {
  const value = group.get(name)?.[0]
  return value === undefined || value === '' ? null : value
}

/** A value without its leading type (`rfc822; `, `smtp; `), when it has one. */
export function withoutType(value: string): string {
  return value.replace(/^[A-Za-z0-9-]{1,40}\s*;\s*/, '')
}

/** RFC 6533 unitext: `\x{HEX}` stands for that code point. */
function decodeUnitext(value: string): string {
  return value.replace(/\\x\{([0-9A-Fa-f]{1,6})\}/g, (whole, hex: string) => {
    const code = Number.parseInt(hex, 16)
    return code <= 0x10ffff ? String.fromCodePoint(code) : whole
  })
}

/** The lower-cased address in a recipient field or a line (`rfc822; <Bob@Example.org>`), or null. */
export function addressOf(value: string | null): string | null {
  if (value === null) return null
  const bare = decodeUnitext(withoutType(value.trim()))
    .trim()
    .replace(/^<(.*)>$/, '$1')
  return /^[^\s@<>(),;:"]{1,200}@[^\s@<>(),;:"]{1,255}$/.test(bare) ? bare.toLowerCase() : null
}

const ENHANCED_STATUS = /(?:^|[\s(#[])([245]\.\d{1,3}\.\d{1,3})(?=$|[\s),;:\]]|\.(?!\d))/

/** The first enhanced status code (`5.1.1`) in a text, or null. */
export function statusIn(text: string | null): string | null {
  return text === null ? null : (ENHANCED_STATUS.exec(text)?.[1] ?? null)
}

/** A diagnostic or reply, on one line and bounded; null when empty. */
export function diagnosticOf(text: string | null): string | null {
  if (text === null) return null
  const line = text.replace(/\s+/g, ' ').trim()
  return line === '' ? null : line.slice(0, MAX_DIAGNOSTIC)
}

/** A Message-ID field's value as sent, angle brackets included. */
export function messageIdOf(value: string | null): string | null {
  if (value === null) return null
  const bracketed = /<[^<>\s]{1,500}>/.exec(value)?.[0]
  if (bracketed !== undefined) return bracketed
  const bare = value.trim()
  return /^[^<>\s]{1,500}$/.test(bare) ? `<${bare}>` : null
}

const RETURNED_TYPES = new Set([
  'message/rfc822',
  'message/global',
  'text/rfc822-headers',
  'message/global-headers',
])
const MESSAGE_ID_LINE = /^message-id:[ \t]*(?:\r?\n[ \t]+)?(<[^<>\s]{1,500}>)/gim

/** The headers of the returned message a report carries as a part, or null. */
export function returnedHeaders(message: ReportParts): FieldGroup | null {
  const part = message.parts.find((p) => RETURNED_TYPES.has(p.contentType))
  if (part === undefined) return null
  const head = part.content.split(/\r?\n[ \t]*\r?\n/, 1)[0] ?? ''
  return fieldGroups(head)[0] ?? null
}

/**
 * The returned message's Message-ID: from the returned part's headers, else from headers quoted in
 * the text, else from a Message-ID header in the raw message that is not the report's own (a
 * returned message shown inline exposes no part).
 */
export function returnedMessageId(message: ReportParts): string | null {
  const headers = returnedHeaders(message)
  const fromPart = headers === null ? null : messageIdOf(field(headers, 'message-id'))
  if (fromPart !== null) return fromPart
  for (const source of [message.text, message.raw]) {
    for (const match of source.matchAll(MESSAGE_ID_LINE)) {
      if (match[1] !== undefined && match[1] !== message.ownMessageId) return match[1]
    }
  }
  return null
}

/** How a notice that the mail is only late, not refused, says so in its opening text. */
const DELAY_WORDING =
  /\b(?:delayed|not yet been delivered|not been delivered yet|hasn't been delivered yet|not delivered yet|warning only|not an error|still being retried|will (?:keep )?(?:re)?try(?:ing)?|temporary problem)\b/i

/** Whether a non-standard bounce's opening text (never the returned message) says the mail is only late. */
export function saysDelayed(opening: string): boolean {
  return DELAY_WORDING.test(opening)
}

/**
 * A recipient of a non-standard bounce: failed, or delayed when the notice says so or the reply is
 * temporary (4xx or 4.x.x); null when the address is none.
 */
export function plainRecipient(
  address: string | null,
  reply: string | null,
  delayed: boolean,
): ReportedRecipient | null {
  const email = addressOf(address)
  if (email === null) return null
  const diagnostic = diagnosticOf(reply)
  const status = statusIn(diagnostic)
  const temporary = delayed || status?.startsWith('4') === true || /^4\d\d\b/.test(diagnostic ?? '')
  return { email, action: temporary ? 'delayed' : 'failed', status, diagnostic }
}

/** The recipients read, without the lines that named no address, at most MAX_RECIPIENTS. */
export function presentRecipients(recipients: (ReportedRecipient | null)[]): ReportedRecipient[] {
  return recipients.filter((r): r is ReportedRecipient => r !== null).slice(0, MAX_RECIPIENTS)
}

/** A recipient block of a non-standard bounce: the address its first line names, and its text on one line. */
export interface RecipientBlock {
  address: string
  text: string
}

/** How much of one recipient's explanation is read. */
const MAX_BLOCK = 4000

/**
 * The blocks of `lines` that start with a line `start` matches (address in group 1, the rest of
 * the line in group 2) and run to a blank line or the next start.
 */
export function recipientBlocks(lines: readonly string[], start: RegExp): RecipientBlock[] {
  const blocks: RecipientBlock[] = []
  let current: RecipientBlock | null = null
  for (const line of lines) {
    const opening = start.exec(line)
    if (opening?.[1] !== undefined) {
      if (blocks.length === MAX_RECIPIENTS) break
      current = { address: opening[1], text: (opening[2] ?? '').slice(0, MAX_BLOCK) }
      blocks.push(current)
    } else if (line.trim() === '') {
      current = null
    } else if (current !== null && current.text.length < MAX_BLOCK) {
      current.text = `${current.text} ${line.trim()}`.trim().slice(0, MAX_BLOCK)
    }
  }
  return blocks
}

/** A non-standard bounce's text cut at its recipient section. */
export interface Section {
  /** The text up to and including the line that opens the section. */
  opening: string
  lines: string[]
}

/** The lines after `start`'s match up to `end`'s; null when `start` is not in the text. */
export function sectionOf(text: string, start: RegExp, end: RegExp): Section | null {
  const match = start.exec(text)
  if (match === null) return null
  const after = match.index + match[0].length
  const rest = text.slice(after)
  const stop = end.exec(rest)?.index ?? rest.length
  return { opening: text.slice(0, after), lines: rest.slice(0, stop).split('\n') }
}
