import type { AttemptOutcome, RecipientOutcome } from './outcome.ts'

/**
 * Whether a refusal says the recipient's mailbox does not exist, so that mail to it should stop
 * for good (a hard bounce; docs/suppressions.md). Policy and reputation refusals (5.7.x), a full
 * mailbox (5.2.2) and anything temporary say nothing of the address and never count.
 */

/** Enhanced status codes (RFC 3463) that name the mailbox or its address as gone or wrong. */
const MAILBOX_GONE_STATUSES = new Set(['1.1', '1.2', '1.3', '1.6', '1.10', '2.1'])

/**
 * What a bare 5xx (no enhanced status code) must say to count: the phrases servers use when the
 * mailbox does not exist, compared case-insensitively. Each names a missing user or mailbox
 * plainly; "mailbox unavailable" is left out, as servers also give it for policy refusals.
 */
export const MAILBOX_GONE_PHRASES: readonly string[] = [
  'user unknown',
  'unknown user',
  'no such user',
  'no such mailbox',
  'no such recipient',
  'recipient unknown',
  'unknown recipient',
  'mailbox not found',
  'mailbox does not exist',
  'user does not exist',
  'address does not exist',
  'account does not exist',
]

/** `550 5.1.1 ...`: the basic code, and the enhanced status when the reply gives one. */
const REPLY = /^\s*([2-5]\d\d)(?:[ -]+([245])\.(\d{1,3})\.(\d{1,3})(?=\s|$))?/

/** Whether a server's reply refuses the recipient for good because its mailbox does not exist. */
export function isMailboxGone(reply: string): boolean {
  const match = REPLY.exec(reply)
  if (!match?.[1]?.startsWith('5')) return false
  const [, , klass, subject, detail] = match
  if (klass !== undefined) return isMailboxGoneStatus(`${klass}.${subject}.${detail}`)
  const text = reply.toLowerCase()
  return MAILBOX_GONE_PHRASES.some((phrase) => text.includes(phrase))
}

/** Whether an enhanced status code (`5.1.1`, as a bounce report's Status gives it) says the mailbox is gone for good. */
export function isMailboxGoneStatus(status: string): boolean {
  const match = /^\s*5\.(\d{1,3}\.\d{1,3})\s*$/.exec(status)
  return match?.[1] !== undefined && MAILBOX_GONE_STATUSES.has(match[1])
}

/**
 * The recipients an attempt found gone: each refused with its own reply (at RCPT), or the one
 * recipient of a message refused at DATA. A refusal of the whole message at any other command
 * (MAIL FROM, the size) speaks of the sender or the message, not of a mailbox.
 */
export function mailboxesGone(outcome: AttemptOutcome): RecipientOutcome[] {
  const ownReplies =
    outcome.refusedAt === undefined || (outcome.refusedAt === 'DATA' && outcome.recipients.length === 1)
  if (!ownReplies) return []
  return outcome.recipients.filter(
    (r) => r.status === 'refused' && r.reply !== null && isMailboxGone(r.reply),
  )
}
