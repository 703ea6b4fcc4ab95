/** The order of suppression entries: which one an address keeps when a second one comes. */

export type SuppressionReason = 'hard_bounce' | 'complaint' | 'unsubscribe' | 'manual'
export type SuppressionScope = 'all' | 'marketing'

/**
 * Weakest first. A complaint is the recipient's own word against all mail, a hard bounce the
 * server's that the mailbox is gone; a manual entry is the account's choice, which either of
 * those overrides; an unsubscribe only stops marketing and is the weakest.
 */
const REASONS_WEAKEST_FIRST: readonly SuppressionReason[] = [
  'unsubscribe',
  'manual',
  'hard_bounce',
  'complaint',
]

/** Whether `text` names one of the reasons, as a recorded outcome spells it. */
export function isSuppressionReason(text: string): text is SuppressionReason {
  return (REASONS_WEAKEST_FIRST as readonly string[]).includes(text)
}

/**
 * An entry's strength: a higher one replaces a lower one, an equal or lower one leaves the
 * entry as it is. Within one reason, scope `all` outranks `marketing`, so that widening a
 * manual entry takes effect. The database stores the number and compares it in the statement
 * that adds an entry, so this function stays the one place the order is written.
 */
export function suppressionStrength(entry: { reason: SuppressionReason; scope: SuppressionScope }): number {
  return REASONS_WEAKEST_FIRST.indexOf(entry.reason) * 2 + (entry.scope === 'all' ? 1 : 0)
}
