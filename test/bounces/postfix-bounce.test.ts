/**
 * A real Postfix bounces a real message: it takes the message, the remote server refuses the
 * recipient with 550 5.1.1, and Postfix writes the delivery status notification to the sender.
 * Put into the connection's mailbox, that report is read by Mailroom's worker like any other.
 */
import { simpleParser } from 'mailparser'
import nodemailer from 'nodemailer'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { setMailbox } from '../../src/connections/mailbox.ts'
import { scheduleMailboxReads } from '../../src/db/jobs.ts'
import { seedAccount, useTestApp } from '../support/app.ts'
import { startDovecot, type TestDovecot } from '../support/dovecot.ts'
import { startPostfix, type TestPostfix } from '../support/postfix.ts'
import { waitFor } from '../support/queue.ts'
import { postSend } from '../support/sending.ts'
import type { ReceivedMessage, SmtpSink } from '../support/smtp-sink.ts'

const tls = inject('tls')
const UNKNOWN = 'nobody@example.test'
const app = useTestApp()

let remote: SmtpSink
let sendersMailbox: SmtpSink
let postfix: TestPostfix
let dovecot: TestDovecot

beforeAll(async () => {
  remote = await app.sink({
    port: 587,
    behaviour: {
      recipientReplies: {
        [UNKNOWN]: { code: 550, message: `5.1.1 <${UNKNOWN}>: Recipient address rejected: User unknown` },
      },
    },
  })
  sendersMailbox = await app.sink({ port: 587 })
  postfix = await startPostfix(tls, { 'example.test': remote, 'sender.test': sendersMailbox })
  dovecot = await startDovecot(tls, ['bounces@sender.test'])
})
afterAll(async () => {
  await postfix?.stop()
  await dovecot?.stop()
})

/** Hands a message to Postfix as a mail client would: STARTTLS required, the run's CA trusted. */
async function sendThroughPostfix(from: string, messageId: string): Promise<void> {
  const client = nodemailer.createTransport({
    host: postfix.host,
    port: postfix.port,
    secure: false,
    requireTLS: true,
    tls: { ca: tls.caPem },
    logger: false,
  })
  try {
    await client.sendMail({ from, to: UNKNOWN, subject: 'Your receipt', text: 'Thank you.', messageId })
  } finally {
    client.close()
  }
}

/** Postfix's report on the message `messageId`, once the sender's mailbox has it. */
function reportOn(messageId: string): Promise<ReceivedMessage> {
  return waitFor(
    async () => `Postfix's report on ${messageId}; Postfix's log:\n${await postfix.log()}`,
    () => sendersMailbox.messages.find((m) => m.raw.includes(messageId)),
    20_000,
  )
}

describe('a real Postfix bouncing a real message', () => {
  it('takes the message, then reports the remote refusal to the sender as a delivery status notification', async () => {
    const messageId = `<receipt-${Date.now()}@sender.test>`
    await sendThroughPostfix('owner@sender.test', messageId)
    const report = await reportOn(messageId)

    expect(report.envelope).toEqual({ from: '', to: ['owner@sender.test'] })
    const parsed = await simpleParser(report.raw, { keepDeliveryStatus: true })
    const contentType = parsed.headers.get('content-type') as {
      value: string
      params: Record<string, string>
    }
    expect(contentType.value).toBe('multipart/report')
    expect(contentType.params['report-type']).toBe('delivery-status')

    const status = parsed.attachments.find((part) => part.contentType === 'message/delivery-status')
    // Folded lines joined, as a reader of the fields sees them.
    const fields = (status?.content.toString('utf8') ?? '').replace(/\r?\n[ \t]+/g, ' ')
    expect(fields).toMatch(new RegExp(`^Final-Recipient: rfc822; ?${UNKNOWN}$`, 'im'))
    expect(fields).toMatch(/^Action: failed$/im)
    expect(fields).toMatch(/^Status: 5\.1\.1$/im)
    expect(fields).toMatch(/^Diagnostic-Code: smtp; ?550 5\.1\.1 .*User unknown$/im)

    // The message itself comes back with the report: its Message-ID ties the report to the email.
    const returned = parsed.attachments.find((part) => part.contentType === 'message/rfc822')
    expect(returned?.content.toString('utf8')).toContain(`Message-ID: ${messageId}`)
  })

  it('is read from the connection mailbox by the worker: the email shows the bounce and the address is suppressed', {
    timeout: 60_000,
  }, async () => {
    // The test Postfix offers no AUTH (it relays for loopback), so the login is never sent.
    const seeded = await seedAccount(app, {
      plan: 'pro',
      connection: {
        host: postfix.host,
        port: postfix.port,
        username: 'shop',
        password: 'never-asked',
        from: 'shop@sender.test',
      },
    })
    const connectionId = seeded.connection?.id ?? 0
    await setMailbox(app.services, connectionId, {
      host: dovecot.host,
      port: 993,
      username: dovecot.user.username,
      password: dovecot.user.password,
    })
    const sent = await postSend(app, seeded.key, {
      to: [UNKNOWN],
      subject: 'Your receipt',
      text_body: 'Thank you.',
    })
    expect(sent.status).toBe(200)
    const messageId = sent.body.messageId as string
    const report = await reportOn(messageId)
    await dovecot.append(dovecot.user, report.raw)

    await app.worker()
    await scheduleMailboxReads(app.services.sql)
    const emailId = sent.body.outboxId as number
    const bounced = await waitFor(
      'the bounce in the email’s history',
      async () => {
        const shown = (await (await app.request(`/emails/${emailId}`, { key: seeded.key })).json()) as {
          email: { history: { type: string }[]; recipients: unknown[] }
        }
        const entry = shown.email.history.find((e) => e.type === 'bounced')
        return entry ? { entry, recipients: shown.email.recipients } : undefined
      },
      30_000,
    )
    expect(bounced.entry).toEqual({
      type: 'bounced',
      at: expect.any(String),
      recipient: UNKNOWN,
      status: '5.1.1',
      diagnostic: `550 5.1.1 <${UNKNOWN}>: Recipient address rejected: User unknown`,
      suppressed: true,
    })
    expect(bounced.recipients).toEqual([
      { email: UNKNOWN, status: 'bounced', reply: expect.stringContaining('5.1.1') },
    ])

    const res = await app.request(`/suppressions/${encodeURIComponent(UNKNOWN)}`, { key: seeded.key })
    expect(res.status).toBe(200)
    expect(((await res.json()) as { suppression: unknown }).suppression).toMatchObject({
      email: UNKNOWN,
      reason: 'hard_bounce',
      scope: 'all',
      detail: expect.stringContaining('550 5.1.1'),
      source: { type: 'email', id: emailId },
    })
  })
})
