import { EVENT_COLUMNS, emailEventData } from './outbox-records.ts'
import type { Db } from './sql.ts'
import { emailEntriesSuppressed } from './suppressions.ts'
import { eventsRecorded, recordedEvents } from './webhooks.ts'

/** The outbox_reports table: bounce and complaint reports read from a connection's mailbox. */

export type ReportKind = 'bounced' | 'complained'

/** What a report says of one recipient, ready to record. */
export interface ReportLine {
  /** Lower-cased, as the report gave it; null when the report names no one (see recordReport). */
  recipient: string | null
  kind: ReportKind
  status: string | null
  diagnostic: string | null
  /**
   * The entry it adds to the account's suppressions (reason and `suppressionStrength`'s number),
   * or null for a report that suppresses no one (a soft bounce).
   */
  suppression: { reason: 'hard_bounce' | 'complaint'; strength: number } | null
}

/** Where the report came from and the email it names. */
export interface ReportOrigin {
  accountId: number
  connectionId: number
  messageId: string
}

export interface RecordedReport {
  /** Lines that found their email and recipient, recorded now or by an earlier reading. */
  matched: number
  /** Lines recorded now: each with its history, recipient status, suppression and webhook event. */
  recorded: { kind: ReportKind; suppressed: boolean }[]
}

/**
 * Records what a report says of the email the account sent under `messageId`, for each line whose
 * recipient is one of the email's (a line naming no one: its only recipient), in one statement: the report, the recipient's status, the
 * suppression (replacing a weaker entry only) and the webhook event (email.bounced or
 * email.complained). A line recorded already (the same email, kind, recipient and status) adds
 * nothing, so that a report read twice changes nothing the second time.
 */
export async function recordReport(
  db: Db,
  origin: ReportOrigin,
  lines: ReportLine[],
): Promise<RecordedReport> {
  const given = lines.map((l) => ({
    recipient: l.recipient,
    kind: l.kind,
    status: l.status,
    diagnostic: l.diagnostic,
    reason: l.suppression?.reason ?? null,
    strength: l.suppression?.strength ?? null,
  }))
  const [row] = await db<{ matched: number; recorded: RecordedReport['recorded'] | null }[]>`
    with given as (
      select * from jsonb_to_recordset(${db.json(given)}::jsonb)
        as g(recipient text, kind text, status text, diagnostic text, reason text, strength smallint)
    ), matched as (
      -- The hash index on message_id finds the email; the account is checked on the row found.
      -- A line naming no one (a complaint whose reporter redacted the address) is the email's
      -- only recipient's, and nobody's when it had several.
      select o.id as outbox_id, o.account_id, a.recipient, g.kind, g.status, g.diagnostic, g.reason, g.strength
      from outbox o cross join given g
      cross join lateral (
        select lower(x.address) as recipient
        from unnest(o.to_addresses || o.cc_addresses || o.bcc_addresses) x(address)
        where case when g.recipient is null
                   then cardinality(o.to_addresses || o.cc_addresses || o.bcc_addresses) = 1
                   else lower(x.address) = g.recipient end
        limit 1) a
      where o.message_id = ${origin.messageId} and o.account_id = ${origin.accountId}
    ), report as (
      insert into outbox_reports (outbox_id, account_id, connection_id, kind, recipient, status, diagnostic, hard)
      select outbox_id, account_id, ${origin.connectionId}, kind, recipient, status, diagnostic, reason is not null
      from matched
      on conflict (outbox_id, kind, recipient, (coalesce(status, ''))) do nothing
      returning outbox_id, account_id, kind, recipient, status, diagnostic, hard
    ), record as (
      update outbox o set recipients = (
        select jsonb_agg(coalesce(
          (select x || jsonb_build_object('status', r.kind, 'reply', r.diagnostic) from report r
           where r.outbox_id = o.id and r.recipient = lower(x ->> 'address') limit 1), x) order by n)
        from jsonb_array_elements(o.recipients) with ordinality as e(x, n))
      where o.id in (select outbox_id from report)
      returning ${EVENT_COLUMNS(db)}
    ), suppressed as (${emailEntriesSuppressed(
      db,
      db`select r.account_id, r.recipient as email, m.reason, m.strength, r.diagnostic as detail, r.outbox_id
         from report r join matched m using (outbox_id, kind, recipient) where r.hard`,
    )}), ${recordedEvents(
      db,
      db`select r.account_id, 'email.' || k.kind as type, ${emailEventData(db)} || jsonb_build_object(
           'report', jsonb_build_object('recipient', k.recipient, 'status', k.status,
                                        'diagnostic', k.diagnostic, 'suppressed', k.hard)) as data
         from report k join record r on r.id = k.outbox_id`,
    )}
    select (select count(*)::int from matched) as matched,
      (select jsonb_agg(jsonb_build_object('kind', kind, 'suppressed', hard)) from report) as recorded,
      ${eventsRecorded(db)} as events`
  return { matched: row?.matched ?? 0, recorded: row?.recorded ?? [] }
}
