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
  recipients: ReportedRecipient[]
  /** ARF Feedback-Type (abuse, fraud, ...); only for complaints. */
  feedbackType?: string
}

/** Reads a raw message from the mailbox; null when it is no bounce or complaint report (other mail). */
export async function readReport(raw: Buffer): Promise<Report | null> {
  void raw
  return null
}

/** Whether the recipient's mailbox is gone for good (hard bounce). */
export function isHardBounce(recipient: ReportedRecipient): boolean {
  void recipient
  return false
}
