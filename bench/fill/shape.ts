/**
 * What the filled outbox looks like: its size and the proportions of everything in it, as one
 * installation of `accounts` tenants would hold after `days` days. Every figure of the fill is
 * here, so that docs/performance.md can state them and another row can ask for a different size.
 */
export interface FillShape {
  /** Outbox records, batch recipients' included. */
  records: number
  accounts: number
  connectionsPerAccount: number
  /** Records are spread over the last `days` days (under the Pro plan's 90 of retention). */
  days: number
}

/** Bumped whenever the fill writes something else: a cached fill of another version is made anew. */
export const FILL_VERSION = 1

/** The proportions, each a share of the records unless said. */
export const PROPORTIONS = {
  /** Records of batch recipients (rendered from their batch's content, no subject or bodies of their own). */
  batchRecords: 0.25,
  /** The one batch every scale has (smaller when the whole fill is smaller). */
  bigBatchRecipients: 100_000,
  /** Other batches' sizes run from this to 10 times it. */
  smallestBatch: 500,
  /** Of transactional records: made by /send (the rest by /enqueue). */
  sentNow: 0.6,
  failed: 0.03,
  canceled: 0.005,
  /** Of the last day's transactional records: still queued (half of them scheduled ahead). */
  queuedLastDay: 0.05,
  /** Records needing a second attempt (a deferral first); a failed one takes 1 to 3. */
  retried: 0.05,
  /** Of failed batch records: retried by hand (an outbox_retries row). */
  retriedByHand: 0.1,
  /** Of transactional records: one tag (category:*), and of those a second (plan:*). */
  tagged: 0.3,
  secondTag: 0.2,
  /** Of /send records: with an Idempotency-Key. */
  idempotent: 0.2,
  /** Accounts with a webhook endpoint; their records of the last 30 days have an event and a delivery. */
  webhookAccounts: 0.2,
  /** Suppressed addresses per account, as a share of its records. */
  suppressions: 0.005,
  /** Distinct recipients of one account's transactional mail. */
  recipientsPerAccount: 200_000,
} as const

/** The 20 values of the category tag; the bench filters on the third. */
export const CATEGORIES = [
  'receipt',
  'password-reset',
  'welcome',
  'invoice',
  'shipping',
  'digest',
  'verify',
  'reminder',
  'alert',
  'report',
  'statement',
  'confirmation',
  'order',
  'trial',
  'renewal',
  'security',
  'comment',
  'mention',
  'survey',
  'export',
] as const

/**
 * Subjects of transactional records, each as often as its weight. The bench searches a common
 * word (`shipped`) and a rare one (`refund`).
 */
export const SUBJECTS: [string, number][] = [
  ['Your receipt #', 20],
  ['Reset your password', 15],
  ['Welcome aboard', 10],
  ['Invoice ', 10],
  ['Your order has shipped #', 8],
  ['Your weekly digest', 8],
  ['Verify your address', 8],
  ['Reminder: your appointment', 7],
  ['Security alert', 5],
  ['Your monthly report', 5],
  ['Statement ready', 3],
  ['Your refund is on its way #', 1],
]

export function shapeOf(env: NodeJS.ProcessEnv, records: number): FillShape {
  return {
    records,
    accounts: Number(env.BENCH_FILL_ACCOUNTS ?? 1000),
    connectionsPerAccount: Number(env.BENCH_FILL_CONNECTIONS ?? 1),
    days: 88,
  }
}

/** The one batch's size at this scale: 100,000 recipients, or a tenth of the records when fewer. */
export function bigBatchSize(shape: FillShape): number {
  return Math.min(PROPORTIONS.bigBatchRecipients, Math.floor(shape.records / 10))
}
