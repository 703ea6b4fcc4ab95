import type { RecipientOutcome } from '../smtp/outcome.ts'

/**
 * A message's recipients across attempts: who is still to be tried, what each attempt changed,
 * and how the outcome reads for a person.
 */

/** The first of the items that `key` takes for the same, in their order. */
export function firstOfEach<T>(items: readonly T[], key: (item: T) => unknown): T[] {
  const seen = new Set<unknown>()
  return items.filter((item) => {
    const k = key(item)
    if (seen.has(k)) return false
    seen.add(k)
    return true
  })
}

/**
 * The first spelling of each address, compared case-insensitively, in their order. Audience
 * members are de-duplicated in their statement instead, as their index compares them
 * (docs/architecture.md).
 */
export function uniqueAddresses(addresses: readonly string[]): string[] {
  return firstOfEach(addresses, (address) => address.toLowerCase())
}

/** Every recipient of a message once: its envelope. */
export function envelopeOf(message: { to: string[]; cc: string[]; bcc: string[] }): string[] {
  return uniqueAddresses([...message.to, ...message.cc, ...message.bcc])
}

/**
 * Who an attempt goes to: everyone at first, then those still deferred. A recipient left out at
 * acceptance has its outcome before any attempt, and the others none yet.
 */
export function stillToTry(envelope: string[], outcomes: RecipientOutcome[] | null): string[] {
  if (outcomes === null) return envelope
  const known = new Map(outcomes.map((r) => [r.address.toLowerCase(), r.status]))
  return envelope.filter((address) => (known.get(address.toLowerCase()) ?? 'deferred') === 'deferred')
}

/** Every recipient's outcome after an attempt: this attempt's where it tried them, the earlier one otherwise. */
export function afterAttempt(
  envelope: string[],
  earlier: RecipientOutcome[] | null,
  attempt: RecipientOutcome[],
): RecipientOutcome[] {
  const latest = new Map<string, RecipientOutcome>()
  for (const outcome of [...(earlier ?? []), ...attempt]) latest.set(outcome.address.toLowerCase(), outcome)
  const tried = envelope.map(
    (address) => latest.get(address.toLowerCase()) ?? { address, status: 'deferred' as const, reply: null },
  )
  // The recipients left out at acceptance are on the record but not in its envelope: kept, after it.
  const inEnvelope = new Set(envelope.map((address) => address.toLowerCase()))
  return [...tried, ...(earlier ?? []).filter((r) => !inEnvelope.has(r.address.toLowerCase()))]
}

/**
 * Whether the server took the message for the recipient: accepted, including when a report read
 * later said it bounced or was complained of.
 */
export function serverTook(outcome: RecipientOutcome): boolean {
  return outcome.status === 'accepted' || outcome.status === 'bounced' || outcome.status === 'complained'
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
