import {
  addressOf,
  plainRecipient,
  presentRecipients,
  type Report,
  type ReportedRecipient,
  type ReportParts,
  recipientBlocks,
  saysDelayed,
  sectionOf,
} from './fields.ts'
import { gmailRecipients, microsoftRecipients } from './provider-bounces.ts'

/**
 * Bounces that carry no delivery-status part, read from their text in the layouts of the common
 * servers: Postfix, Exim, qmail, Gmail and Microsoft 365 (provider-bounces.ts).
 */

/**
 * Postfix: "The mail system", then `<addr>: host mx[ip] said: 550 5.1.1 ... (in reply to RCPT TO
 * command)`, or the local reason (`<addr>: unknown user: "bob"`).
 */
function postfixRecipients(message: ReportParts): ReportedRecipient[] {
  const section = sectionOf(
    message.text,
    /^[ \t]*The mail system[ \t]*$/m,
    /^(?:-{2,}|Reporting-MTA:|Received:)/im,
  )
  if (section === null) return []
  const delayed = /^Delayed Mail/i.test(message.subject) || saysDelayed(section.opening)
  const blocks = recipientBlocks(section.lines, /^<([^<>\s]+)>(?: \(expanded from <[^<>\s]*>\))?:\s*(.*)$/)
  return presentRecipients(
    blocks.map(({ address, text }) => {
      const said = /\bsaid:\s*(.*?)(?:\s*\(in reply to [^)]*\))?$/.exec(text)?.[1]
      return plainRecipient(address, said ?? text, delayed)
    }),
  )
}

const EXIM_SMTP_ERROR =
  /SMTP error from remote (?:mail server|mailer) after [^:]{1,60}(?::<[^<>]*>)?:\s*(?:host \S+ \[[^\]]*\]:\s*)?(.*)$/i
const LEADING_HOST = /^host \S+ \[[^\]]*\]\s*/i

/** The addresses an Exim block opens with (indented, one a line) and the reason that follows. */
function eximBlock(block: string): { addresses: string[]; reason: string } {
  const addresses: string[] = []
  const reason: string[] = []
  for (const line of block.split('\n')) {
    const address = reason.length === 0 ? addressOf(line.trim()) : null
    if (address !== null) addresses.push(address)
    else reason.push(line.trim())
  }
  return { addresses, reason: reason.join(' ').trim() }
}

/**
 * Exim: "The following address(es) failed:" (or, for a delay, "...has not yet been delivered
 * is:"), then per block the address, indented, and "SMTP error from remote mail server after RCPT
 * TO:<addr>: 550 ...", or a local reason ("Unrouteable address").
 */
function eximRecipients(message: ReportParts): ReportedRecipient[] {
  const section = sectionOf(
    message.text,
    /(?:following address(?:\(es\)|es)? failed|has not yet been delivered (?:is|are))[ \t]*:[ \t]*$/im,
    /^(?:-{3,}|No action is required|Reporting-MTA:)/im,
  )
  if (section === null) return []
  const delayed = saysDelayed(section.opening)
  const recipients: (ReportedRecipient | null)[] = []
  for (const block of section.lines.join('\n').split(/\n[ \t]*\n/)) {
    const { addresses, reason } = eximBlock(block)
    const reply =
      EXIM_SMTP_ERROR.exec(reason)?.[1] ?? reason.replace(LEADING_HOST, '').replace(/^Delay reason:\s*/i, '')
    recipients.push(...addresses.map((address) => plainRecipient(address, reply, delayed)))
  }
  return presentRecipients(recipients)
}

/**
 * qmail: "Hi. This is the qmail-send program", then per block `<addr>:` on its own line and the
 * reason: "Remote host said: 550 ..." or a local one ("Sorry, no mailbox here by that name. (#5.1.1)").
 */
function qmailRecipients(message: ReportParts): ReportedRecipient[] {
  const section = sectionOf(
    message.text,
    /qmail-send program|(?:wasn't|was not) able to deliver your message to the following addresses.*$/im,
    /^--- (?:Below this line|Enclosed are)/im,
  )
  if (section === null) return []
  const delayed = saysDelayed(section.opening)
  const blocks = recipientBlocks(section.lines, /^<([^<>\s]+)>:\s*(.*)$/)
  return presentRecipients(
    blocks.map(({ address, text }) => {
      const said = /Remote host said:\s*(.*?)(?:\s+(?:Giving up on|I'm not going to try again)\b.*)?$/.exec(
        text,
      )?.[1]
      return plainRecipient(address, said ?? text, delayed)
    }),
  )
}

type PlainFormat = Exclude<Report['format'], 'dsn' | 'arf'>

/** Layouts in the order they are tried: the most distinctive wording first. */
const LAYOUTS: readonly [PlainFormat, (message: ReportParts) => ReportedRecipient[]][] = [
  ['qmail', qmailRecipients],
  ['exim', eximRecipients],
  ['microsoft', microsoftRecipients],
  ['gmail', gmailRecipients],
  ['postfix', postfixRecipients],
]

/** The layout a bounce without a delivery-status part was read as, and its recipients; null when none fits. */
export function plainBounce(
  message: ReportParts,
): { format: PlainFormat; recipients: ReportedRecipient[] } | null {
  for (const [format, read] of LAYOUTS) {
    const recipients = read(message)
    if (recipients.length > 0) return { format, recipients }
  }
  return null
}
