import type { RecipientOutcome } from '../smtp/outcome.ts'

/**
 * A message's recipients across attempts: who is still to be tried, what each attempt changed,
 * and how the outcome reads for a person.
 */

/** Every recipient of a message once (compared case-insensitively, first spelling kept): its envelope. */
export function envelopeOf(message: { to: string[]; cc: string[]; bcc: string[] }): string[] {
  const seen = new Set<string>()
  return [...message.to, ...message.cc, ...message.bcc].filter((address) => {
    const key = address.toLowerCase()
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

/** Who an attempt goes to: everyone at first, then those still deferred. */
export function stillToTry(envelope: string[], outcomes: RecipientOutcome[] | null): string[] {
  if (outcomes === null) return envelope
  return outcomes.filter((r) => r.status === 'deferred').map((r) => r.address)
}

/** Every recipient's outcome after an attempt: this attempt's where it tried them, the earlier one otherwise. */
export function afterAttempt(
  envelope: string[],
  earlier: RecipientOutcome[] | null,
  attempt: RecipientOutcome[],
): RecipientOutcome[] {
  const latest = new Map<string, RecipientOutcome>()
  for (const outcome of [...(earlier ?? []), ...attempt]) latest.set(outcome.address.toLowerCase(), outcome)
  return envelope.map(
    (address) => latest.get(address.toLowerCase()) ?? { address, status: 'deferred', reply: null },
  )
}

/** The outcomes of recipients that did not get the message. */
export function notDelivered(outcomes: RecipientOutcome[]): RecipientOutcome[] {
  return outcomes.filter((r) => r.status !== 'accepted')
}

/**
 * The record's error: null when every recipient got the message; a lone recipient's reply as
 * the server gave it; otherwise who got it and each other recipient's reply.
 */
export function outcomeText(outcomes: RecipientOutcome[], prefix = ''): string | null {
  const missed = notDelivered(outcomes)
  if (missed.length === 0) return null
  const delivered = outcomes.length - missed.length
  // A lone recipient, or a refusal of the message itself: the server's reply as it gave it.
  const replies = new Set(missed.map((r) => r.reply))
  const [reply] = replies
  if (delivered === 0 && replies.size === 1) return `${prefix}${reply ?? 'not delivered'}`
  const head = delivered > 0 ? `Delivered to ${delivered} of ${outcomes.length} recipients; ` : ''
  const each = missed.map((r) => `${r.address}: ${r.reply ?? 'not delivered'}`).join('; ')
  return `${head}${prefix}${each}`
}
