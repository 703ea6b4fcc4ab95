import {
  DATE,
  deliveryStatus,
  folded,
  message,
  multipart,
  type Part,
  POSTFIX_FAILED,
  REPORTING_MTA,
  returnedHeaderLines,
  returnedParts,
  SENDER,
  text,
} from './report-mime.ts'

/**
 * Bounces in the layouts servers write their own notices in: Postfix, Exim, qmail, Gmail and
 * Microsoft 365. Each is text alone unless `structured` adds the delivery-status part they also send.
 */

export interface PlainBounceOptions {
  messageId: string | null
  recipient: string
  /** The remote server's reply, e.g. `550 5.1.1 <bob@example.org>: Recipient address rejected: User unknown`. */
  reply: string
  /** A notice that the mail is late and still being tried, not a failure. */
  delayed?: boolean
  /** Adds the delivery-status part these servers also send, making the notice a multipart/report. */
  structured?: boolean
}

let notices = 0

/**
 * The notice's text with, when asked, a delivery-status part, and the returned message or its
 * headers (none for the servers that copy the message into the text itself).
 */
function notice(
  options: PlainBounceOptions,
  headers: string[],
  explanation: Part,
  returned: Part | null = null,
): string {
  const status = statusOf(options.reply)
  const parts = [
    explanation,
    ...(options.structured === true
      ? [
          deliveryStatus({
            messageId: options.messageId,
            recipients: [
              {
                email: options.recipient,
                status,
                action: options.delayed === true ? 'delayed' : 'failed',
                diagnostic: options.reply,
              },
            ],
          }),
        ]
      : []),
    ...(returned === null ? [] : [returned]),
  ]
  const content =
    parts.length === 1
      ? explanation
      : multipart(
          options.structured === true ? 'multipart/report; report-type=delivery-status' : 'multipart/mixed',
          parts,
        )
  return message(
    [...headers, `To: ${SENDER}`, `Date: ${DATE}`, `Message-ID: <notice-${++notices}@${REPORTING_MTA}>`],
    content,
  )
}

function statusOf(reply: string): string {
  const code = /^(\d)\d\d(?:[ -](\d\.\d{1,3}\.\d{1,3}))?/.exec(reply)
  return code?.[2] ?? `${code?.[1] ?? '5'}.0.0`
}

/** Postfix's notice (bounce(8)): "The mail system", then `<addr>: host ... said: <reply>`. */
export function postfixBounce(options: PlainBounceOptions): string {
  const opening =
    options.delayed === true
      ? [
          `This is the mail system at host ${REPORTING_MTA}.`,
          '',
          '####### THIS IS A WARNING ONLY.  YOU DO NOT NEED TO RESEND YOUR MESSAGE. #######',
          '',
          'Your message could not be delivered for more than 4 hour(s).',
          'It will be retried until it is 5 day(s) old.',
          '',
          '                   The mail system',
          '',
        ]
      : POSTFIX_FAILED
  const said = folded(
    `<${options.recipient}>`,
    `host mx.recipient.example[192.0.2.25] said: ${options.reply} (in reply to RCPT TO command)`,
  )
  return notice(
    options,
    [
      `From: MAILER-DAEMON@${REPORTING_MTA} (Mail Delivery System)`,
      `Subject: ${options.delayed === true ? 'Delayed Mail (still being retried)' : 'Undelivered Mail Returned to Sender'}`,
    ],
    text([...opening, said, '']),
    returnedParts(options.messageId, options.recipient, 'headers'),
  )
}

/** The returned message as Exim and qmail append it to their text. */
function inlineCopy(options: PlainBounceOptions): string[] {
  return [...returnedHeaderLines(options.messageId, options.recipient), '', 'Thank you for your order.', '']
}

/** Exim's notice: the failed (or delayed) address, indented, and "SMTP error from remote mail server after RCPT TO:". */
export function eximBounce(options: PlainBounceOptions): string {
  const address = [
    `  ${options.recipient}`,
    '    host mx.recipient.example [192.0.2.25]',
    `    ${options.delayed === true ? 'Delay reason: ' : ''}SMTP error from remote mail server after RCPT TO:<${options.recipient}>:`,
    `    ${options.reply}`,
    '',
  ]
  const lines =
    options.delayed === true
      ? [
          'This message was created automatically by mail delivery software.',
          '',
          'A message that you sent has not yet been delivered to one or more of its',
          `recipients after more than 24 hours on the queue on ${REPORTING_MTA}.`,
          '',
          'The address to which the message has not yet been delivered is:',
          '',
          ...address,
          'No action is required on your part. Delivery attempts will continue for',
          'some time, and this warning may be repeated at intervals if the message',
          'remains undelivered. Eventually the mail delivery software will give up,',
          'and when that happens, the message will be returned to you.',
          '',
          "------ This is a copy of the message's headers. ------",
          '',
          ...returnedHeaderLines(options.messageId, options.recipient),
          '',
        ]
      : [
          'This message was created automatically by mail delivery software.',
          '',
          'A message that you sent could not be delivered to one or more of its',
          'recipients. This is a permanent error. The following address(es) failed:',
          '',
          ...address,
          '------ This is a copy of the message, including all the headers. ------',
          '',
          `Return-path: <${SENDER}>`,
          ...inlineCopy(options),
        ]
  return notice(
    options,
    [
      `From: Mail Delivery System <Mailer-Daemon@${REPORTING_MTA}>`,
      `Subject: ${options.delayed === true ? 'Warning: message 1tA2bC-000D4e-5F delayed 24 hours' : 'Mail delivery failed: returning message to sender'}`,
      'Auto-Submitted: auto-replied',
    ],
    text(lines),
  )
}

/** qmail-send's notice: `<addr>:` on its own line, then "Remote host said:" and the reply. */
export function qmailBounce(options: PlainBounceOptions): string {
  const lines = [
    `Hi. This is the qmail-send program at ${REPORTING_MTA}.`,
    "I'm afraid I wasn't able to deliver your message to the following addresses.",
    "This is a permanent error; I've given up. Sorry it didn't work out.",
    '',
    `<${options.recipient}>:`,
    '192.0.2.25 does not like recipient.',
    `Remote host said: ${options.reply}`,
    'Giving up on 192.0.2.25.',
    '',
    '--- Below this line is a copy of the message.',
    '',
    `Return-Path: <${SENDER}>`,
    ...inlineCopy(options),
  ]
  return notice(options, [`From: MAILER-DAEMON@${REPORTING_MTA}`, 'Subject: failure notice'], text(lines))
}

/** Gmail's notice: "Your message wasn't delivered to addr because ..." and "The response from the remote server was:". */
export function gmailBounce(options: PlainBounceOptions): string {
  const lines =
    options.delayed === true
      ? [
          '** Message not delivered yet **',
          '',
          `There was a temporary problem delivering your message to ${options.recipient}. Gmail will retry for 47 more hours. You'll be notified if the delivery fails permanently.`,
          '',
          'The response from the remote server was:',
          options.reply,
          '',
        ]
      : [
          '** Address not found **',
          '',
          `Your message wasn't delivered to ${options.recipient} because the address couldn't be found, or is unable to receive mail.`,
          '',
          'Learn more here: https://support.google.com/mail/?p=NoSuchUser',
          '',
          'The response from the remote server was:',
          options.reply,
          '',
        ]
  return notice(
    options,
    [
      'From: Mail Delivery Subsystem <mailer-daemon@googlemail.com>',
      `Subject: Delivery Status Notification (${options.delayed === true ? 'Delay' : 'Failure'})`,
    ],
    text(lines),
    returnedParts(options.messageId, options.recipient, 'message'),
  )
}

/**
 * Microsoft 365's non-delivery report: "Your message to addr couldn't be delivered", the
 * "Diagnostic information for administrators" block with "Remote Server returned '...'", and the
 * original message's headers quoted at the end of the text; `htmlOnly` leaves out the plain
 * alternative, as some Exchange servers do.
 */
export function microsoftBounce(options: PlainBounceOptions & { htmlOnly?: boolean }): string {
  const [user, domain] = options.recipient.split('@')
  const diagnostics = [
    'Diagnostic information for administrators:',
    '',
    'Generating server: AM0PR01MB1234.eurprd01.prod.exchangelabs.com',
    '',
    options.recipient,
    `Remote Server returned '${options.reply}'`,
    '',
    'Original message headers:',
    '',
    'Received: from sender.example (192.0.2.10) by AM0PR01MB1234.eurprd01.prod.exchangelabs.com',
    ...returnedHeaderLines(options.messageId, options.recipient),
    '',
  ]
  const lines =
    options.delayed === true
      ? [
          'Delivery is delayed to these recipients or groups:',
          '',
          options.recipient,
          '',
          'Subject: Your receipt',
          '',
          "This message hasn't been delivered yet. Delivery will continue to be attempted.",
          '',
          ...diagnostics,
        ]
      : [
          `Your message to ${options.recipient} couldn't be delivered.`,
          `${user} wasn't found at ${domain}.`,
          '',
          'Action Required',
          'Unknown To address',
          '',
          ...diagnostics,
        ]
  const html = {
    headers: ['Content-Type: text/html; charset=us-ascii'],
    body: `<html><body>${lines.map((l) => `<p>${l.replace(/</g, '&lt;')}</p>`).join('')}</body></html>`,
  }
  return notice(
    options,
    [
      'From: Microsoft Outlook <MicrosoftExchange329e71ec88ae4615bbc36ab6ce41109e@sender.example>',
      `Subject: ${options.delayed === true ? 'Delivery delayed:' : 'Undeliverable:'} Your receipt`,
    ],
    multipart('multipart/alternative', options.htmlOnly === true ? [html] : [text(lines), html]),
    null,
  )
}
