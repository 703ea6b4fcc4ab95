import { simpleParser } from 'mailparser'
import nodemailer from 'nodemailer'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { startPostfix, type TestPostfix } from '../support/postfix.ts'
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.ts'

const tls = inject('tls')
const SENDER = 'owner@sender.test'
const UNKNOWN = 'nobody@example.test'

let remote: SmtpSink
let sendersMailbox: SmtpSink
let postfix: TestPostfix

beforeAll(async () => {
  remote = await startSmtpSink({
    port: 587,
    behaviour: {
      recipientReplies: {
        [UNKNOWN]: { code: 550, message: `5.1.1 <${UNKNOWN}>: Recipient address rejected: User unknown` },
      },
    },
  })
  sendersMailbox = await startSmtpSink({ port: 587 })
  postfix = await startPostfix(tls, { 'example.test': remote, 'sender.test': sendersMailbox })
})
afterAll(async () => {
  await postfix?.stop()
  await remote?.close()
  await sendersMailbox?.close()
})

/** Hands a message to Postfix as a mail client would: STARTTLS required, the run's CA trusted. */
async function sendThroughPostfix(messageId: string): Promise<void> {
  const client = nodemailer.createTransport({
    host: postfix.host,
    port: postfix.port,
    secure: false,
    requireTLS: true,
    tls: { ca: tls.caPem },
    logger: false,
  })
  try {
    await client.sendMail({
      from: SENDER,
      to: UNKNOWN,
      subject: 'Your receipt',
      text: 'Thank you for your order.',
      messageId,
    })
  } finally {
    client.close()
  }
}

/** Postfix's report, once the sender's mailbox has it; Postfix's log when it never comes. */
async function bounceReport() {
  const [report] = await sendersMailbox.waitForMessages(1, 20_000).catch(async (error) => {
    throw new Error(`${error.message}\n${await postfix.log()}`)
  })
  if (!report) throw new Error('no report')
  return report
}

/**
 * The body of the report's part of this type, folded lines joined. mailparser hands the
 * delivery-status part over as text run into the notice, not as a part of its own.
 */
function partOf(raw: string, boundary: string, type: string): string {
  const part = raw
    .split(`--${boundary}`)
    .find((candidate) =>
      new RegExp(`^Content-Type: ${type}\\b`, 'im').test(candidate.split(/\r?\n\r?\n/)[0] ?? ''),
    )
  if (!part) throw new Error(`the report has no ${type} part`)
  return part.slice(part.search(/\r?\n\r?\n/)).replace(/\r?\n[ \t]+/g, ' ')
}

describe('a real Postfix bouncing a real message', () => {
  it('takes the message, then reports the remote refusal to the sender as a delivery status notification', async () => {
    const messageId = `<receipt-${Date.now()}@sender.test>`
    await sendThroughPostfix(messageId)
    const report = await bounceReport()

    expect(report.envelope).toEqual({ from: '', to: [SENDER] })
    const parsed = await simpleParser(report.raw)
    const contentType = parsed.headers.get('content-type') as {
      value: string
      params: Record<string, string>
    }
    expect(contentType.value).toBe('multipart/report')
    expect(contentType.params['report-type']).toBe('delivery-status')

    const fields = partOf(report.raw, contentType.params.boundary ?? '', 'message/delivery-status')
    expect(fields).toMatch(new RegExp(`^Final-Recipient: rfc822; ?${UNKNOWN}$`, 'im'))
    expect(fields).toMatch(/^Action: failed$/im)
    expect(fields).toMatch(/^Status: 5\.1\.1$/im)
    expect(fields).toMatch(/^Diagnostic-Code: smtp; ?550 5\.1\.1 .*User unknown$/im)

    // The message itself comes back with the report: its Message-ID ties the report to the email.
    const returned = parsed.attachments.find((part) => part.contentType === 'message/rfc822')
    expect(returned?.content.toString('utf8')).toContain(`Message-ID: ${messageId}`)
  })
})
