import type { RecipientOutcome } from '../smtp/outcome.ts'
import type { Payload } from './audiences.ts'
import type { UnitsWhere } from './usage.ts'

/**
 * What the outbox's records are, as every layer names them: the record, the message it sends,
 * an attempt and what becomes of it, a listing's filter and a record's whole history. Types only,
 * so that the domain and the pages import them from here and nothing imports them through another.
 */

/**
 * Where an email came from: POST /send or /enqueue (`api`), a batch, a hosted form's
 * notification or a signup page's confirmation (`form`), or the SMTP relay.
 */
export type EmailSource = 'api' | 'batch' | 'form' | 'smtp'

/** `scheduled` is a queued record whose scheduled time is still ahead: it is read, not stored. */
export type OutboxStatus = 'scheduled' | 'queued' | 'sending' | 'sent' | 'failed' | 'canceled'

/** A record as every listing reads it: the API's, the dashboard's and the operator's. */
export interface OutboxRecord {
  id: number
  account_id: number
  /** Null when the connection was deleted. */
  connection_id: number | null
  status: OutboxStatus
  from: string
  to: string[]
  cc: string[]
  bcc: string[]
  subject: string
  message_id: string
  error: string | null
  /** What became of each recipient so far; null before the first attempt. */
  recipients: RecipientOutcome[] | null
  attempts: number
  /** When a queued message is tried next (UTC, API shape); null unless queued. */
  next_attempt_at: string | null
  /** When it was scheduled for (UTC, API shape); null when it was not. */
  scheduled_at: string | null
  created_at: string
  updated_at: string
  sent_at: string | null
  /** The batch the message is one recipient of. */
  batch_id: number | null
  /** In the order given; [] for none. */
  tags: Tag[]
  source: EmailSource
}

/** What an outbox record keeps of an attachment once its bytes are gone; a type, to be JSON. */
export type StoredAttachment = {
  filename: string
  content_type: string
  size: number
  sha256: string
  content_id?: string
}

/** A record as the outbox lists it, with where its replies go. */
export interface ListedRecord extends OutboxRecord {
  /** Its Reply-To: the caller's addresses, its batch's or a form's submitter; [] for none. */
  reply_to: string[]
}

/** A label an email carries, to be found by (names are unique within an email); a type, to be JSON. */
export type Tag = {
  name: string
  value: string
}

/** A batch's content as stored once: subject and bodies with their placeholders unrendered. */
export interface BatchContent {
  subject: string
  text_body: string | null
  html_body: string | null
}

/**
 * A record as stored: a batch recipient's record has no subject or bodies of its own but its
 * batch's `content` (only the fields the reader asked for) and its `payload`, rendered by the
 * reader; any other record has its own, and `content` null.
 */
export type StoredRecord<T extends { subject: string }> = Omit<T, 'subject'> & {
  subject: string | null
  content: (Partial<BatchContent> & { subject: string }) | null
  payload: Payload
}

/** What every outbox record says of its message, whatever path sends it. */
export interface OutboxMessage {
  accountId: number
  connectionId: number
  from: string
  to: string[]
  cc: string[]
  bcc: string[]
  subject: string
  messageId: string
}

/** Where a send's units were taken, so that a give-back returns them to the same windows. */
export type Reservation = UnitsWhere

/** The bodies of a message, kept with its record. */
export interface MessageBodies {
  text_body?: string | undefined
  html_body?: string | undefined
}

/** How an attempt went, as its line in the record's history says it. */
export type AttemptKind = 'delivered' | 'refused' | 'deferred' | 'pushback' | 'unreachable'

export interface AttemptLine {
  /** The record's attempt number. */
  attempt: number
  kind: AttemptKind
  /** The server's reply to the message, or the reason it went no further. */
  reply: string | null
  recipients: RecipientOutcome[]
}

/** What becomes of the record after an attempt. */
export type Settlement =
  /**
   * Ended: `releaseKey` frees a /send's idempotency key (its caller may retry under it);
   * `counter` counts the attempt's transient failure or deferral, as for a retry.
   */
  | { status: 'sent' | 'failed'; error: string | null; releaseKey?: boolean; counter?: RetryCounter }
  /**
   * Queued again, due after `delayMs`; the failure or deferral counted toward the retry schedule
   * (none when the attempt only met an outage of the connection already known).
   */
  | { status: 'queued'; error: string; delayMs: number; counter?: RetryCounter }

export type RetryCounter = 'failures' | 'deferrals'

/** An attempt to settle: its record, its line in the history, every recipient's outcome so far, and what becomes of the record. */
export interface AttemptSettlement {
  id: number
  line: AttemptLine
  recipients: RecipientOutcome[]
  settlement: Settlement
  /** Recipients whose mailbox is gone: the account's suppressions, written with the settlement. */
  hardBounces?: HardBounce[] | undefined
}

/** A recipient to suppress as a hard bounce; `strength` is `suppressionStrength`'s. */
export interface HardBounce {
  email: string
  detail: string
  strength: number
}

/** A POST /send attempt's record, and whether it is still in flight. */
export type AttemptRecord = OutboxRecord & { in_flight: boolean }

/** The attempt an idempotency key points at, and whether its lease ran out while in flight. */
export type KeyedAttempt = AttemptRecord & { lease_over: boolean }

/** What a listing of the outbox keeps: every field given must match. */
export interface OutboxFilter {
  status?: OutboxStatus | undefined
  connectionId?: number | undefined
  batchId?: number | undefined
  /** First day (YYYY-MM-DD, UTC), included. */
  from?: string | undefined
  /** Last day (YYYY-MM-DD, UTC), included. */
  to?: string | undefined
  /** Part of a recipient's address or of the subject, any case. */
  search?: string | undefined
  /** A whole address that one of the recipients (to, cc or bcc) is, any case. */
  recipient?: string | undefined
  /** Tags the record carries, every one of them. */
  tags?: Tag[] | undefined
}

/** One record whole, as its own page shows it. */
export interface OutboxDetail extends ListedRecord {
  /** The extra header fields it goes with (its batch's for a batch recipient); {} for none. */
  headers: Record<string, string>
  /** Its files, never their bytes (its batch's for a batch recipient); [] for none. */
  attachments: StoredAttachment[]
  /** The connection's sending address, null when it was deleted. */
  connection_from: string | null
  /** The batch's name, null when there is no batch (or it was deleted). */
  batch_name: string | null
  /** Null when the content was not kept. */
  text_body: string | null
  html_body: string | null
  /** Everything that happened to the message, oldest first. */
  history: HistoryEvent[]
}

/** One attempt as the record's history keeps it. */
export interface AttemptEvent {
  /** sent: the server took the message (for some recipients at least); refused: for none, for good. */
  type: 'sent' | 'deferred' | 'refused'
  at: string
  attempt: number
  outcome: AttemptKind
  reply: string | null
  recipients: RecipientOutcome[]
}

/** One event of a record's history: its creation, each attempt, its failure, a retry by hand, a report. */
export type HistoryEvent =
  /**
   * Queued for the worker (a scheduled email when it fell due), submitted to POST /send (which
   * tries it at once), accepted for later, or canceled.
   */
  | { type: 'queued' | 'submitted' | 'scheduled' | 'canceled'; at: string }
  | AttemptEvent
  | { type: 'failed'; at: string; reason: string | null }
  | { type: 'retried'; at: string; by: RetriedBy }
  | ReportEvent

/** A bounce or complaint report for one recipient, read from the connection's mailbox. */
export interface ReportEvent {
  type: 'bounced' | 'complained'
  at: string
  recipient: string
  /** A bounce's enhanced status code. */
  status: string | null
  /** A bounce's Diagnostic-Code, a complaint's Feedback-Type. */
  diagnostic: string | null
  /** The recipient was added to the account's suppressions. */
  suppressed: boolean
}

/** Who queued failed mail again: the account's owner on the dashboard, or the operator command. */
export type RetriedBy = 'dashboard' | 'operator'

/** A batch recipient whose record failed. */
export interface FailedRecipient {
  outbox_id: number
  email: string
  error: string | null
  attempts: number
  updated_at: string
}

/** Sent and failed messages of one UTC day. */
export interface DayActivity {
  /** YYYY-MM-DD, UTC. */
  day: string
  sent: number
  failed: number
}
