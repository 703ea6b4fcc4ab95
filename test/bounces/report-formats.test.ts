import { describe, expect, it } from 'vitest'
import { readReport } from '../../src/bounces/report.ts'
import {
  arfReport,
  dsnReport,
  eximBounce,
  gmailBounce,
  microsoftBounce,
  type PlainBounceOptions,
  postfixBounce,
  qmailBounce,
} from '../support/bounce-reports.ts'

const MESSAGE_ID = '<0b7c6f1e-5a2d-4c8e-9f3a-2d1e0c9b8a7f@sender.example>'
const GONE = '550 5.1.1 <bob@example.org>: Recipient address rejected: User unknown in virtual mailbox table'

function read(raw: string) {
  return readReport(Buffer.from(raw))
}

describe('delivery status notifications (RFC 3464)', () => {
  it('reads each recipient group, its Message-ID in the form Mailroom stores it', async () => {
    const report = await read(
      dsnReport({
        messageId: MESSAGE_ID,
        recipients: [
          { email: 'Bob@Example.org', status: '5.1.1', diagnostic: GONE },
          { email: 'carol@example.org', status: '5.2.2', diagnostic: '552 5.2.2 Mailbox full' },
        ],
      }),
    )
    expect(report).toEqual({
      kind: 'bounce',
      format: 'dsn',
      messageId: MESSAGE_ID,
      recipients: [
        { email: 'bob@example.org', action: 'failed', status: '5.1.1', diagnostic: GONE },
        {
          email: 'carol@example.org',
          action: 'failed',
          status: '5.2.2',
          diagnostic: '552 5.2.2 Mailbox full',
        },
      ],
    })
  })

  it('names a recipient by its Final-Recipient, and by its Original-Recipient when that is all it has', async () => {
    const report = await read(
      dsnReport({
        messageId: MESSAGE_ID,
        recipients: [
          { email: 'bob@mail.example.org', originalRecipient: 'bob@example.org', status: '5.1.1' },
          { email: null, originalRecipient: 'Dave@Example.org', status: '5.1.1' },
        ],
      }),
    )
    expect(report?.recipients.map((r) => r.email)).toEqual(['bob@mail.example.org', 'dave@example.org'])
  })

  it('reads a notice of a delayed message as a bounce whose recipients are delayed', async () => {
    const report = await read(
      dsnReport({
        messageId: MESSAGE_ID,
        subject: 'Delayed Mail (still being retried)',
        recipients: [
          { email: 'bob@example.org', action: 'delayed', status: '4.4.1', diagnostic: '451 4.4.1 No answer' },
        ],
      }),
    )
    expect(report).toMatchObject({
      kind: 'bounce',
      format: 'dsn',
      recipients: [{ action: 'delayed', status: '4.4.1' }],
    })
  })

  it('reads the returned headers alone (text/rfc822-headers) and a UTF-8 report (RFC 6533)', async () => {
    for (const options of [
      { returned: 'headers' as const },
      { global: true, returned: 'headers' as const },
      { global: true },
    ]) {
      const report = await read(
        dsnReport({
          ...options,
          messageId: MESSAGE_ID,
          recipients: [{ email: 'bob@example.org', status: '5.1.1', diagnostic: GONE }],
        }),
      )
      expect(report, JSON.stringify(options)).toMatchObject({
        format: 'dsn',
        messageId: MESSAGE_ID,
        recipients: [{ email: 'bob@example.org', status: '5.1.1', diagnostic: GONE }],
      })
    }
  })

  it('leaves out the recipients it reports delivered, and is no report when all were', async () => {
    const mixed = await read(
      dsnReport({
        messageId: MESSAGE_ID,
        recipients: [
          { email: 'bob@example.org', status: '5.1.1' },
          { email: 'carol@example.org', action: 'relayed', status: '2.0.0' },
        ],
      }),
    )
    expect(mixed?.recipients.map((r) => r.email)).toEqual(['bob@example.org'])
    const success = dsnReport({
      messageId: MESSAGE_ID,
      subject: 'Successful Mail Delivery Report',
      recipients: [
        { email: 'carol@example.org', action: 'delivered', status: '2.0.0', diagnostic: '250 2.0.0 Ok' },
      ],
    })
    expect(await read(success)).toBeNull()
  })

  it("finds the Message-ID of a returned message shown inline, never the report's own", async () => {
    const recipients = [{ email: 'bob@example.org', status: '5.1.1' }]
    expect(await read(dsnReport({ messageId: MESSAGE_ID, returned: 'inline', recipients }))).toMatchObject({
      messageId: MESSAGE_ID,
    })
    expect(await read(dsnReport({ messageId: null, returned: 'inline', recipients }))).toMatchObject({
      messageId: null,
    })
  })

  it('has no Message-ID when the returned message carries none', async () => {
    const report = await read(
      dsnReport({ messageId: null, recipients: [{ email: 'bob@example.org', status: '5.1.1' }] }),
    )
    expect(report).toMatchObject({ format: 'dsn', messageId: null })
  })
})

describe('complaint reports (RFC 5965 ARF)', () => {
  it('reads the feedback type, the complaining recipient and the Message-ID', async () => {
    const report = await read(
      arfReport({ messageId: MESSAGE_ID, recipient: 'Bob@Example.org', feedbackType: 'abuse' }),
    )
    expect(report).toEqual({
      kind: 'complaint',
      format: 'arf',
      messageId: MESSAGE_ID,
      feedbackType: 'abuse',
      recipients: [{ email: 'bob@example.org', action: null, status: null, diagnostic: null }],
    })
  })

  it("takes the recipient from the returned message's To when the report names none", async () => {
    const report = await read(
      arfReport({
        messageId: MESSAGE_ID,
        recipient: 'bob@example.org',
        feedbackType: 'fraud',
        namesRecipient: false,
      }),
    )
    expect(report).toMatchObject({
      kind: 'complaint',
      feedbackType: 'fraud',
      recipients: [{ email: 'bob@example.org' }],
    })
  })

  it('is no complaint when the recipient says the mail is not spam, or the report is of a failed authentication', async () => {
    for (const feedbackType of ['not-spam', 'auth-failure']) {
      expect(
        await read(arfReport({ messageId: MESSAGE_ID, recipient: 'bob@example.org', feedbackType })),
        feedbackType,
      ).toBeNull()
    }
  })
})

describe("the servers' own notices", () => {
  const layouts = [
    ['postfix', postfixBounce],
    ['exim', eximBounce],
    ['qmail', qmailBounce],
    ['gmail', gmailBounce],
    ['microsoft', microsoftBounce],
  ] as const
  const failed: PlainBounceOptions = { messageId: MESSAGE_ID, recipient: 'Bob@Example.org', reply: GONE }

  it.each(layouts)(
    'reads a %s notice from its text: the recipient, the reply and the Message-ID',
    async (format, build) => {
      expect(await read(build(failed))).toEqual({
        kind: 'bounce',
        format,
        messageId: MESSAGE_ID,
        recipients: [{ email: 'bob@example.org', action: 'failed', status: '5.1.1', diagnostic: GONE }],
      })
    },
  )

  it.each(layouts)('reads a %s notice of a delay as delayed', async (format, build) => {
    const report = await read(
      build({ ...failed, delayed: true, reply: '451 4.7.1 Greylisted, please try again later' }),
    )
    expect(report).toMatchObject({
      format,
      recipients: [{ email: 'bob@example.org', action: 'delayed', status: '4.7.1' }],
    })
  })

  it.each(layouts)('reads a bare %s reply without an enhanced status', async (format, build) => {
    const report = await read(build({ ...failed, reply: '550 user unknown' }))
    expect(report).toMatchObject({
      format,
      recipients: [{ action: 'failed', status: null, diagnostic: '550 user unknown' }],
    })
  })

  it.each(layouts)('prefers the delivery-status part a %s notice also carries', async (_format, build) => {
    const report = await read(build({ ...failed, structured: true }))
    expect(report).toMatchObject({
      format: 'dsn',
      messageId: MESSAGE_ID,
      recipients: [{ email: 'bob@example.org', status: '5.1.1' }],
    })
  })

  it('reads a Microsoft notice that has only its HTML alternative', async () => {
    expect(await read(microsoftBounce({ ...failed, htmlOnly: true }))).toMatchObject({
      format: 'microsoft',
      messageId: MESSAGE_ID,
      recipients: [{ email: 'bob@example.org', action: 'failed', status: '5.1.1', diagnostic: GONE }],
    })
  })

  it("reads Microsoft 365's 5.1.10 and qmail's local refusal", async () => {
    const microsoft = await read(
      microsoftBounce({
        ...failed,
        reply: '550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup',
      }),
    )
    expect(microsoft?.recipients[0]).toMatchObject({
      status: '5.1.10',
      diagnostic: expect.stringMatching(/^550 5\.1\.10 RESOLVER/),
    })
    const qmail = await read(
      qmailBounce({ ...failed, reply: 'Sorry, no mailbox here by that name. (#5.1.1)' }),
    )
    expect(qmail?.recipients[0]).toMatchObject({ action: 'failed', status: '5.1.1' })
  })
})
