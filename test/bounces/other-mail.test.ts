import { describe, expect, it } from 'vitest'
import { MAX_RECIPIENTS } from '../../src/bounces/fields.ts'
import { readReport } from '../../src/bounces/report.ts'
import { dsnReport } from '../support/bounce-reports.ts'

const CRLF = '\r\n'

function mail(headers: string[], body: string[]): Buffer {
  return Buffer.from(
    [...headers, 'MIME-Version: 1.0', 'Content-Type: text/plain; charset=utf-8', '', ...body, ''].join(CRLF),
  )
}

describe('mail that is no report', () => {
  it('a plain message is other mail', async () => {
    const raw = mail(
      [
        'From: Carol <carol@example.org>',
        'To: owner@sender.example',
        'Subject: Re: Your receipt',
        'Message-ID: <c1@example.org>',
      ],
      ['Thanks, the mail system works fine for me.', '', '<bob@example.org>: please copy him next time.'],
    )
    expect(await readReport(raw)).toBeNull()
  })

  it('an auto-reply is other mail', async () => {
    const raw = mail(
      [
        'From: Bob <bob@example.org>',
        'To: owner@sender.example',
        'Subject: Automatic reply: Your receipt',
        'Auto-Submitted: auto-replied',
        'Message-ID: <ooo-1@example.org>',
        'In-Reply-To: <m@sender.example>',
      ],
      ['I am out of the office until Monday and will not be able to read your message.'],
    )
    expect(await readReport(raw)).toBeNull()
  })

  it('garbage and a truncated message are other mail, never a throw', async () => {
    expect(await readReport(Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x1b, 0x5b]))).toBeNull()
    expect(await readReport(Buffer.alloc(0))).toBeNull()
    const report = dsnReport({
      messageId: '<m@sender.example>',
      recipients: [{ email: 'bob@example.org', status: '5.1.1' }],
    })
    expect(await readReport(Buffer.from(report.slice(0, report.indexOf('MIME-Version'))))).toBeNull()
    const cuts = Array.from({ length: Math.ceil(report.length / 61) }, (_, i) => report.slice(0, i * 61))
    const read = await Promise.all(cuts.map((cut) => readReport(Buffer.from(cut))))
    expect(read.every((r) => r === null || r.kind === 'bounce')).toBe(true)
  })
})

describe('bounds', () => {
  it('reads a report whose returned message is huge, from the parts before it', async () => {
    const report = dsnReport({
      messageId: '<m@sender.example>',
      recipients: [{ email: 'bob@example.org', status: '5.1.1' }],
    })
    const huge = report.replace('Thank you for your order.', `${'A'.repeat(76)}${CRLF}`.repeat(160_000))
    expect(huge.length).toBeGreaterThan(12_000_000)
    expect(await readReport(Buffer.from(huge))).toMatchObject({
      format: 'dsn',
      recipients: [{ email: 'bob@example.org' }],
    })
  })

  it('reads only the start of a message: a report part past its first 2 MiB is not looked for', async () => {
    const recipients = [{ email: 'bob@example.org', status: '5.1.1' }]
    const explanation = Array.from({ length: 30_000 }, () => 'x'.repeat(76))
    const late = dsnReport({ messageId: '<m@sender.example>', recipients, explanation })
    expect(late.indexOf('Final-Recipient')).toBeGreaterThan(2 * 1024 * 1024)
    expect(await readReport(Buffer.from(late))).toBeNull()
    const early = dsnReport({
      messageId: '<m@sender.example>',
      recipients,
      explanation: explanation.slice(0, 20_000),
    })
    expect(await readReport(Buffer.from(early))).toMatchObject({ format: 'dsn' })
  })

  it(`reads at most ${MAX_RECIPIENTS} recipients of one report`, async () => {
    const recipients = Array.from({ length: MAX_RECIPIENTS + 50 }, (_, i) => ({
      email: `r${i}@example.org`,
      status: '5.1.1',
    }))
    const report = await readReport(Buffer.from(dsnReport({ messageId: '<m@sender.example>', recipients })))
    expect(report?.recipients).toHaveLength(MAX_RECIPIENTS)
    expect(report?.recipients[0]?.email).toBe('r0@example.org')
  })

  it('a hostile message (parts nested without end, a text of endless brackets) is other mail', async () => {
    let nested = `Content-Type: multipart/mixed; boundary="b0"${CRLF}${CRLF}`
    for (let i = 1; i < 20_000; i++)
      nested += `--b${i - 1}${CRLF}Content-Type: multipart/mixed; boundary="b${i}"${CRLF}${CRLF}`
    expect(await readReport(Buffer.from(nested))).toBeNull()
    const brackets = mail(
      ['From: MAILER-DAEMON@mx.example.net', 'Subject: Undelivered Mail Returned to Sender'],
      ['The mail system', '', `<${'<a@'.repeat(400_000)}`, `${' said: 550 '.repeat(100_000)}`],
    )
    expect(await readReport(brackets)).toBeNull()
  })

  it("a notice's text built to make its patterns backtrack is read within its bounds", async () => {
    const notice = (from: string, subject: string, body: string[]) =>
      readReport(mail([`From: ${from}`, 'To: owner@sender.example', `Subject: ${subject}`], body))
    const gmail = await notice('mailer-daemon@googlemail.com', 'Delivery Status Notification (Failure)', [
      `Your message wasn't delivered to ${'a@'.repeat(30_000)} because`,
      `Delivery to the following recipient failed permanently:`,
      `${'b@'.repeat(30_000)}!`,
      `The response from the remote server was:`,
      `550 ${'\t'.repeat(30_000)}`,
    ])
    expect(gmail).toBeNull()
    const microsoft = await notice('postmaster@outlook.example', 'Undeliverable: Your receipt', [
      "Your message to bob@example.org couldn't be delivered.",
      `#550 ${' '.repeat(60_000)}x`,
    ])
    expect(microsoft?.recipients).toEqual([
      { email: 'bob@example.org', action: 'failed', status: null, diagnostic: null },
    ])
    const postfix = await notice('MAILER-DAEMON@mx.example.net', 'Undelivered Mail Returned to Sender', [
      'The mail system',
      '',
      `<bob@example.org>: host mx said: 550 5.1.1${' '.repeat(60_000)}(in reply to RCPT TO command`,
    ])
    expect(postfix?.recipients[0]?.diagnostic?.length).toBeLessThanOrEqual(1000)
  })
})
