/**
 * The pieces the test bounce and complaint reports are built of (bounce-reports.ts): MIME parts
 * with CRLF line ends, the returned message, and the delivery-status part of RFC 3464.
 */

export const CRLF = '\r\n'
export const DATE = 'Sat, 28 Nov 2026 06:00:00 +0000'
export const SENDER = 'owner@sender.example'
export const REPORTING_MTA = 'mx.example.net'

export interface Part {
  headers: string[]
  body: string
}

let boundaries = 0

function render({ headers, body }: Part): string {
  return [...headers, '', body].join(CRLF)
}

export function multipart(type: string, parts: Part[]): Part {
  boundaries += 1
  const boundary = `=_report_${boundaries}_${Date.now().toString(36)}`
  const body = `${parts.map((part) => `--${boundary}${CRLF}${render(part)}${CRLF}`).join('')}--${boundary}--${CRLF}`
  return { headers: [`Content-Type: ${type}; boundary="${boundary}"`], body }
}

export function message(headers: string[], content: Part): string {
  return render({ headers: [...headers, 'MIME-Version: 1.0', ...content.headers], body: content.body })
}

export function text(lines: string[]): Part {
  return { headers: ['Content-Type: text/plain; charset=us-ascii'], body: lines.join(CRLF) }
}

/** The message that went out and came back: Mailroom's own headers, under `messageId` when given. */
export function returnedHeaderLines(messageId: string | null, recipient: string): string[] {
  return [
    `From: Owner <${SENDER}>`,
    `To: ${recipient}`,
    'Subject: Your receipt',
    `Date: ${DATE}`,
    ...(messageId === null ? [] : [`Message-ID: ${messageId}`]),
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
  ]
}

/** The returned message whole, shown inline (as some servers mark it), or its headers alone. */
export type Returned = 'message' | 'inline' | 'headers'

export function returnedParts(messageId: string | null, recipient: string, as: Returned): Part {
  const headers = returnedHeaderLines(messageId, recipient)
  if (as === 'headers') {
    return {
      headers: ['Content-Type: text/rfc822-headers', 'Content-Description: Undelivered Message Headers'],
      body: [...headers, ''].join(CRLF),
    }
  }
  return {
    headers: [
      'Content-Type: message/rfc822',
      'Content-Description: Undelivered Message',
      ...(as === 'inline' ? ['Content-Disposition: inline'] : []),
    ],
    body: [...headers, '', 'Thank you for your order.', ''].join(CRLF),
  }
}

/** A long field folded as MTAs fold it, continuation lines indented. */
export function folded(name: string, value: string): string {
  const words = value.split(' ')
  const lines: string[] = [`${name}:`]
  for (const word of words) {
    const last = lines.length - 1
    if ((lines[last] ?? '').length + word.length > 72) lines.push(`    ${word}`)
    else lines[last] = `${lines[last]} ${word}`
  }
  return lines.join(CRLF)
}

export interface DsnRecipient {
  /** The Final-Recipient; null leaves the field out (an Original-Recipient names the recipient). */
  email: string | null
  originalRecipient?: string
  status: string
  action?: string
  /** The remote server's reply, given as `Diagnostic-Code: smtp; <reply>`. */
  diagnostic?: string
}

export interface DsnOptions {
  messageId: string | null
  recipients: DsnRecipient[]
  /** The returned message whole (default), shown inline, or its headers alone (RFC 3462 text/rfc822-headers). */
  returned?: Returned
  /** A UTF-8 report (RFC 6533): message/global-delivery-status, addresses of type utf-8. */
  global?: boolean
  /** The human-readable part's lines (default: Postfix's). */
  explanation?: string[]
  subject?: string
  from?: string
}

export function deliveryStatus(options: DsnOptions): Part {
  const type = options.global === true ? 'utf-8' : 'rfc822'
  const groups = options.recipients.map((r) =>
    [
      ...(r.email === null ? [] : [`Final-Recipient: ${type}; ${r.email}`]),
      ...(r.originalRecipient === undefined ? [] : [`Original-Recipient: ${type};${r.originalRecipient}`]),
      `Action: ${r.action ?? 'failed'}`,
      `Status: ${r.status}`,
      'Remote-MTA: dns; mx.recipient.example',
      ...(r.diagnostic === undefined ? [] : [folded('Diagnostic-Code', `smtp; ${r.diagnostic}`)]),
    ].join(CRLF),
  )
  const perMessage = [
    `Reporting-MTA: dns; ${REPORTING_MTA}`,
    'X-Postfix-Queue-ID: 4Dq7Xr1kz9z2',
    `Arrival-Date: ${DATE}`,
  ]
  return {
    headers: [
      `Content-Type: message/${options.global === true ? 'global-' : ''}delivery-status`,
      'Content-Description: Delivery report',
    ],
    body: [perMessage.join(CRLF), ...groups, ''].join(CRLF + CRLF),
  }
}

export const POSTFIX_FAILED = [
  `This is the mail system at host ${REPORTING_MTA}.`,
  '',
  "I'm sorry to have to inform you that your message could not",
  "be delivered to one or more recipients. It's attached below.",
  '',
  'For further assistance, please send mail to postmaster.',
  '',
  'If you do so, please include this problem report. You can',
  'delete your own text from the attached returned message.',
  '',
  '                   The mail system',
  '',
]
