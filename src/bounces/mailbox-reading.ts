import {
  type MailboxToRead,
  mailboxToRead,
  recordMailboxFailure,
  recordMailboxRead,
} from '../db/mailboxes.ts'
import type { Db } from '../db/sql.ts'
import { imapReason, openImap } from '../imap/login.ts'
import {
  type FolderMessage,
  type FolderReading,
  type MessageFate,
  type ReadLimits,
  readFolder,
} from '../imap/reader.ts'
import type { Logger } from '../log.ts'
import type { ReportMetrics } from '../metrics.ts'
import { PLAN_LIMITS } from '../plans.ts'
import { openPassword } from '../smtp/secret-box.ts'
import { applyReport, type ReportFate } from './effects.ts'
import { readReport } from './report.ts'

/**
 * One reading of a connection's mailbox: log in, read what arrived since the last reading,
 * apply each report to the email it names, and leave the rest. Nothing here touches sending: a
 * mailbox that fails only records why.
 */

export interface MailboxReadingDeps {
  sql: Db
  secret: string
  /** MAILROOM_ALLOW_PRIVATE_SMTP_HOSTS, which lets the mailbox's host be private too. */
  allowPrivate: boolean
  log: Logger
  metrics: ReportMetrics
}

/**
 * Fifty messages a reading, each read up to 2 MB: a report's own parts come first, and a report
 * returning a large message is still read from them; a minute later the next fifty are read.
 */
export const MAILBOX_LIMITS: ReadLimits = { messages: 50, maxBytes: 2 * 1024 * 1024 }

export type MailboxReading =
  | { read: true; handled: number; unmatched: number; other: number }
  | { read: false; failure: string }

/** Reads the connection's mailbox once; null when it has none (removed since the run was asked for). */
export async function readMailbox(
  deps: MailboxReadingDeps,
  connectionId: number,
  limits: ReadLimits = MAILBOX_LIMITS,
): Promise<MailboxReading | null> {
  const mailbox = await mailboxToRead(deps.sql, connectionId)
  if (!mailbox) return null
  const counts = { handled: 0, unmatched: 0, other: 0 }
  const decide = decider(deps, { accountId: mailbox.account_id, connectionId }, counts)
  let done: FolderReading
  // Every step here is the IMAP exchange's: the database's work is in `decide`, whose failure
  // the reading reports rather than throws.
  try {
    done = await readOnce(deps, mailbox, limits, decide)
  } catch (error) {
    const failure = imapReason(error)
    await recordMailboxFailure(deps.sql, connectionId, failure)
    deps.metrics.mailboxLoginFailure(connectionId)
    deps.log.warn({ connectionId, failure }, 'connection mailbox could not be read')
    return { read: false, failure }
  }
  await recordMailboxRead(deps.sql, connectionId, {
    ...done.cursor,
    unmatched: counts.unmatched,
    other: counts.other,
  })
  if (done.renumbered)
    deps.log.info({ connectionId }, 'connection mailbox renumbered: its folder is read anew')
  // The messages before it are recorded; the one that failed is read again next time.
  if (done.failure !== undefined) throw done.failure
  return { read: true, ...counts }
}

async function readOnce(
  deps: MailboxReadingDeps,
  mailbox: MailboxToRead,
  limits: ReadLimits,
  decide: (message: FolderMessage) => Promise<MessageFate>,
): Promise<FolderReading> {
  const login = {
    host: mailbox.host,
    port: mailbox.port,
    username: mailbox.username,
    password: openPassword(deps.secret, mailbox.password_encrypted),
  }
  const client = await openImap(login, deps.allowPrivate)
  try {
    const cursor = { uidValidity: mailbox.uidvalidity, lastUid: mailbox.last_uid }
    const options = { ...limits, move: mailbox.move_handled, since: oldestMatchable() }
    return await readFolder(client, mailbox.folder, cursor, options, decide)
  } finally {
    await client.logout().catch(() => client.close())
  }
}

/**
 * A folder read from its start is read from the oldest day a report could still find its email:
 * no plan keeps an email longer than this, so older mail (a big INBOX shared with the SMTP login)
 * is never fetched.
 */
function oldestMatchable(): Date {
  const days = Math.max(...Object.values(PLAN_LIMITS).map((p) => p.retentionDays))
  return new Date(Date.now() - days * 86_400_000)
}

/** What is done with each message read: its report applied, and counted. */
function decider(
  deps: MailboxReadingDeps,
  from: { accountId: number; connectionId: number },
  counts: Record<ReportFate, number>,
): (message: FolderMessage) => Promise<MessageFate> {
  return async (message) => {
    const report = await readReport(message.source)
    const applied = report
      ? await applyReport(deps.sql, from, report)
      : { fate: 'other' as const, recorded: [] }
    for (const line of applied.recorded) {
      const outcome =
        line.kind === 'complained' ? 'complaint' : line.suppressed ? 'hard_bounce' : 'soft_bounce'
      deps.metrics.report(outcome, from.connectionId)
    }
    counts[applied.fate]++
    deps.metrics.mailboxMessage(applied.fate, from.connectionId)
    return applied.fate === 'handled' ? 'handled' : 'left'
  }
}
