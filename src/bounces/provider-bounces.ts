import {
  addressOf,
  plainRecipient,
  presentRecipients,
  type ReportedRecipient,
  type ReportParts,
  recipientBlocks,
  saysDelayed,
  sectionOf,
} from './fields.ts'

/** The notices of the big mailbox providers, Gmail and Microsoft 365, read from their text. */

const GMAIL_SENDER = /@google(?:mail)?\.com\b/i
const GMAIL_SUBJECT = /^(?:Delivery Status Notification|Message not delivered|Delivery incomplete)/i
const GMAIL_ADDRESS_SENTENCES = [
  /(?:wasn't|was not) delivered to\s+<?([^\s<>@]+@[^\s<>]+?)>?\s+because/gi,
  /temporary problem delivering your message to\s+<?([^\s<>@]+@[^\s<>]+?)>?[.,]?\s/gi,
]
const GMAIL_ADDRESS_LIST =
  /Delivery to the following recipients? (?:failed|has been delayed)[^:\n]*:[ \t]*\n((?:[ \t]*\n)?(?:[ \t]*[^\s@]+@\S+[ \t]*(?:\n|$))+)/i
const GMAIL_REPLY =
  /The (?:response (?:from the remote server )?was|error that the other server returned was):?[ \t]*\n(?:[ \t]*\n)?([\s\S]{1,2000}?)(?:\n[ \t]{0,80}\n|$)/i

function gmailAddresses(text: string): string[] {
  const found = GMAIL_ADDRESS_SENTENCES.flatMap((sentence) =>
    [...text.matchAll(sentence)].map((m) => m[1] ?? ''),
  )
  const list = GMAIL_ADDRESS_LIST.exec(text)?.[1]
  return [...new Set([...found, ...(list?.split('\n').map((line) => line.trim()) ?? [])])]
}

/**
 * Gmail: "Your message wasn't delivered to addr because the address couldn't be found", or the
 * older "Delivery to the following recipient failed permanently:", then "The response from the
 * remote server was:" and the reply on the lines below.
 */
export function gmailRecipients(message: ReportParts): ReportedRecipient[] {
  if (!GMAIL_SENDER.test(message.from) && !GMAIL_SUBJECT.test(message.subject)) return []
  const reply = GMAIL_REPLY.exec(message.text)
  const opening = message.text.slice(0, reply?.index ?? 2000)
  const delayed = /\(Delay\)/i.test(message.subject) || saysDelayed(opening)
  return presentRecipients(
    gmailAddresses(message.text).map((address) => plainRecipient(address, reply?.[1] ?? null, delayed)),
  )
}

const MICROSOFT_REPLIES = [/Remote Server returned '([^']*)'/i, /#([245]\d\d[ -][^#]{0,1000})#/]
const MICROSOFT_ADDRESS_LINE = /^\s*<?([^\s<>@]+@[^\s<>()]+?)>?(?:\s*\([^)]*\))?\s*$/

function microsoftReply(text: string): string | null {
  for (const reply of MICROSOFT_REPLIES) {
    const found = reply.exec(text)?.[1]
    if (found !== undefined) return found
  }
  return null
}

/**
 * Microsoft 365 and Exchange: "Diagnostic information for administrators", then per recipient
 * the address on its own line and "Remote Server returned '550 5.1.10 RESOLVER.ADR...'" (or
 * `#550 5.1.1 ... ##`); without that block, "Your message to addr couldn't be delivered".
 */
export function microsoftRecipients(message: ReportParts): ReportedRecipient[] {
  const notice = /^(?:Undeliverable|Delivery delayed|Delivery has failed):/i.test(message.subject)
  const section = sectionOf(
    message.text,
    /Diagnostic information for administrators:?/i,
    /^Original message headers:/im,
  )
  if (section === null && !notice) return []
  const delayed =
    /^Delivery delayed:/i.test(message.subject) ||
    saysDelayed(section?.opening ?? message.text.slice(0, 2000))
  const blocks =
    section === null
      ? []
      : recipientBlocks(
          // An HTML-only report's text has a blank line between every line: each address opens a block.
          section.lines.filter((line) => line.trim() !== ''),
          MICROSOFT_ADDRESS_LINE,
        )
  if (blocks.length > 0) {
    return presentRecipients(
      blocks.map(({ address, text }) => plainRecipient(address, microsoftReply(text) ?? text, delayed)),
    )
  }
  const named = /Your message to\s+<?([^\s<>@]+@[^\s<>]+?)>?\s+couldn't be delivered/i.exec(message.text)?.[1]
  return presentRecipients([plainRecipient(addressOf(named ?? null), microsoftReply(message.text), delayed)])
}
