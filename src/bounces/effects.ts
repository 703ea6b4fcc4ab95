import { type RecordedReport, type ReportLine, recordReport } from '../db/reports.ts'
import type { Db } from '../db/sql.ts'
import { suppressionStrength } from '../suppressions/strength.ts'
import { isHardBounce, type Report, type ReportedRecipient } from './report.ts'

/**
 * What a bounce or complaint report does to the email it names: history, the recipient's status,
 * a suppression for a hard bounce or a complaint, and a webhook event, recorded together.
 */

/** What became of a report: it found its email, it named none of the account's, or it says nothing to record. */
export type ReportFate = 'handled' | 'unmatched' | 'other'

export interface AppliedReport {
  fate: ReportFate
  /** The lines recorded now (none when an earlier reading recorded them). */
  recorded: RecordedReport['recorded']
}

/** Applies `report`, read from the mailbox of `connectionId`, to the account's email it names. */
export async function applyReport(
  db: Db,
  from: { accountId: number; connectionId: number },
  report: Report,
): Promise<AppliedReport> {
  const lines = linesOf(report)
  // A delay or delivery notice says nothing to record: it is mail like any other.
  if (lines.length === 0) return { fate: 'other', recorded: [] }
  if (!report.messageId) return { fate: 'unmatched', recorded: [] }
  const messageId = storable(asStored(report.messageId), 998) ?? ''
  const result = await recordReport(db, { ...from, messageId }, lines)
  return { fate: result.matched > 0 ? 'handled' : 'unmatched', recorded: result.recorded }
}

/** Mailroom writes its Message-IDs with their angle brackets (newMessageId); a report may drop them. */
function asStored(messageId: string): string {
  const id = messageId.trim()
  return id.startsWith('<') ? id : `<${id}>`
}

/**
 * A line per recipient the report says bounced or complained, each (recipient, kind, status)
 * once; a complaint that names no one has one line for no one. A recipient of a bounce counts when its message failed: Action `failed`, or no Action
 * and no temporary (4.x.x) status.
 */
export function linesOf(report: Report): ReportLine[] {
  const lines = new Map<string, ReportLine>()
  for (const r of report.recipients) {
    const line = report.kind === 'complaint' ? complaintLine(r.email, report.feedbackType) : bounceLine(r)
    if (line) lines.set(`${line.recipient} ${line.kind} ${line.status ?? ''}`, line)
  }
  // Feedback loops often redact the address: the complaint is then its email's only recipient's.
  if (report.kind === 'complaint' && lines.size === 0) return [complaintLine(null, report.feedbackType)]
  return [...lines.values()]
}

/** The longest diagnostic kept: a server's reply is a line or two, a stranger's may be anything. */
const MAX_DIAGNOSTIC = 1000

/**
 * Text from a report as PostgreSQL can hold it: no U+0000, no lone surrogate (a report is a
 * stranger's bytes; one the database refused would be read again every minute, and every
 * message after it would wait), and a diagnostic no longer than MAX_DIAGNOSTIC.
 */
function storable(text: string | null, max = MAX_DIAGNOSTIC): string | null {
  if (text === null) return null
  // biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is what is replaced
  const clean = text.toWellFormed().replace(/\u0000/g, '\uFFFD')
  return clean.length > max ? `${clean.slice(0, max - 1)}…` : clean
}

function bounceLine(r: ReportedRecipient): ReportLine | null {
  const failed = r.action === null ? !r.status?.startsWith('4') : r.action.toLowerCase() === 'failed'
  if (!failed || !r.email) return null
  const hard = isHardBounce(r)
  return {
    recipient: storable(r.email.toLowerCase(), 320),
    kind: 'bounced',
    status: storable(r.status, 32),
    diagnostic: storable(r.diagnostic),
    suppression: hard
      ? { reason: 'hard_bounce', strength: suppressionStrength({ reason: 'hard_bounce', scope: 'all' }) }
      : null,
  }
}

function complaintLine(email: string | null, feedbackType: string | undefined): ReportLine {
  return {
    recipient: email ? storable(email.toLowerCase(), 320) : null,
    kind: 'complained',
    status: null,
    diagnostic: storable(feedbackType ?? null),
    suppression: {
      reason: 'complaint',
      strength: suppressionStrength({ reason: 'complaint', scope: 'all' }),
    },
  }
}
