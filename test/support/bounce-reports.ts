/**
 * Bounce and complaint reports as they arrive in a sender's mailbox, built from RFC 3464 (DSN),
 * RFC 6533 (UTF-8 DSN), RFC 5965 (ARF) and the layouts Postfix, Exim, qmail, Gmail and Microsoft
 * 365 use for their own notices. Each builder returns the raw message (CRLF line ends), ready to
 * read or to APPEND into a test mailbox.
 */

import type { ReportLine } from '../../src/db/reports.ts'
import { suppressionStrength } from '../../src/suppressions/strength.ts'
import {
  CRLF,
  DATE,
  type DsnOptions,
  deliveryStatus,
  message,
  multipart,
  POSTFIX_FAILED,
  REPORTING_MTA,
  returnedParts,
  SENDER,
  text,
} from './report-mime.ts'

export type { DsnOptions, DsnRecipient } from './report-mime.ts'
export * from './server-bounce-reports.ts'

/**
 * A report's line as it is recorded: a hard bounce or a complaint, each suppressing its address
 * for all mail (a complaint has no status).
 */
export function suppressingLine(
  kind: ReportLine['kind'],
  recipient: string,
  diagnostic: string,
  status: string | null = null,
): ReportLine {
  const reason = kind === 'bounced' ? 'hard_bounce' : 'complaint'
  return {
    recipient,
    kind,
    status,
    diagnostic,
    suppression: { reason, strength: suppressionStrength({ reason, scope: 'all' }) },
  }
}

/** A delivery status notification (RFC 3464) for the given recipients, as Postfix sends one. */
export function dsnReport(options: DsnOptions): string {
  const explanation = options.explanation ?? [
    ...POSTFIX_FAILED,
    ...options.recipients.map(
      (r) =>
        `<${r.email ?? r.originalRecipient}>: host mx.recipient.example[192.0.2.25] said: ${r.diagnostic ?? r.status}`,
    ),
    '',
  ]
  const report = multipart(
    `multipart/report; report-type=${options.global === true ? 'global-' : ''}delivery-status`,
    [
      {
        ...text(explanation),
        headers: ['Content-Description: Notification', 'Content-Type: text/plain; charset=us-ascii'],
      },
      deliveryStatus(options),
      returnedParts(
        options.messageId,
        options.recipients[0]?.email ?? 'someone@recipient.example',
        options.returned ?? 'message',
      ),
    ],
  )
  return message(
    [
      `From: ${options.from ?? `MAILER-DAEMON@${REPORTING_MTA} (Mail Delivery System)`}`,
      `To: ${SENDER}`,
      `Subject: ${options.subject ?? 'Undelivered Mail Returned to Sender'}`,
      `Date: ${DATE}`,
      `Message-ID: <20261128060001.4Dq7Xr1kz9z2@${REPORTING_MTA}>`,
      'Auto-Submitted: auto-replied',
    ],
    report,
  )
}

export interface ArfOptions {
  messageId: string | null
  recipient: string
  feedbackType?: string
  /** Whether the report names the recipient in Original-Rcpt-To (default); else only the returned message's To does. */
  namesRecipient?: boolean
}

/** A complaint report (RFC 5965 ARF), as a mailbox provider's feedback loop sends one. */
export function arfReport(options: ArfOptions): string {
  const feedback = [
    `Feedback-Type: ${options.feedbackType ?? 'abuse'}`,
    'User-Agent: ExampleFBL/1.0',
    'Version: 1',
    `Original-Mail-From: <${SENDER}>`,
    ...(options.namesRecipient === false ? [] : [`Original-Rcpt-To: <${options.recipient}>`]),
    `Arrival-Date: ${DATE}`,
    'Reporting-MTA: dns; fbl.mailbox.example',
    'Source-IP: 192.0.2.10',
    'Reported-Domain: sender.example',
    '',
  ]
  const report = multipart('multipart/report; report-type=feedback-report', [
    text(['This is an email abuse report for an email message received from IP 192.0.2.10.', '']),
    { headers: ['Content-Type: message/feedback-report'], body: feedback.join(CRLF) },
    returnedParts(options.messageId, options.recipient, 'message'),
  ])
  return message(
    [
      'From: Feedback Loop <fbl@mailbox.example>',
      `To: ${SENDER}`,
      'Subject: FW: Your receipt',
      `Date: ${DATE}`,
      'Message-ID: <fbl-20261128-1@mailbox.example>',
    ],
    report,
  )
}
