/**
 * POST /send: the success body, what reaches the SMTP server (every recipient form, at most ten
 * recipients) and the outbox record every send leaves.
 */
import { describe, expect, it } from 'vitest'
import { useTestApp } from '../../support/app.ts'
import { decodeMessage } from '../../support/batches.ts'
import { humanText } from '../../support/matchers.ts'
import { addressesIn, SENDER, uniqueSubject, useSendRequest } from '../../support/send-request.ts'

const app = useTestApp()
const { accounts, deliver, refused, outboxRow } = useSendRequest(app)

describe('POST /send: success', () => {
  it('answers {success, messageId, outboxId, from, message} and no `replayed`', async () => {
    const { json, received } = await deliver({
      to: 'ada@example.com',
      subject: uniqueSubject('Success body'),
      text_body: 'Hello Ada',
    })
    expect(json).toEqual({
      success: true,
      messageId: expect.stringMatching(/^<[^<>\s]+@[^<>\s]+>$/),
      outboxId: expect.any(Number),
      from: SENDER,
      message: humanText,
    })
    expect(Number.isInteger(json.outboxId)).toBe(true)
    expect(json).not.toHaveProperty('replayed')
    expect(received.headers.get('message-id')).toBe(json.messageId)
  })

  it('delivers From (the connection address), To, Cc, Subject, text and html parts', async () => {
    const subject = uniqueSubject('Full message')
    const { json, received } = await deliver({
      to: 'ada@example.com',
      cc: 'grace@example.com',
      subject,
      text_body: 'Plain words for Ada',
      html_body: '<p>Rich <b>words</b> for Ada</p>',
    })
    expect(json.from).toBe(SENDER)
    expect(received.envelope).toEqual({ from: SENDER, to: ['ada@example.com', 'grace@example.com'] })
    expect(addressesIn(received.headers.get('from'))).toEqual([SENDER])
    expect(addressesIn(received.headers.get('to'))).toEqual(['ada@example.com'])
    expect(addressesIn(received.headers.get('cc'))).toEqual(['grace@example.com'])
    expect(received.headers.get('subject')).toBe(subject)
    expect(decodeMessage(received.raw).text).toBe('Plain words for Ada')
    expect(decodeMessage(received.raw).html).toBe('<p>Rich <b>words</b> for Ada</p>')
  })

  it('accepts only text_body (no html part is sent)', async () => {
    const { received } = await deliver({
      to: 'ada@example.com',
      subject: uniqueSubject('Text only'),
      text_body: 'Only text here',
    })
    expect(decodeMessage(received.raw).text).toBe('Only text here')
    expect(decodeMessage(received.raw).html).toBeUndefined()
  })

  it('accepts only html_body', async () => {
    const { received } = await deliver({
      to: 'ada@example.com',
      subject: uniqueSubject('Html only'),
      html_body: '<p>Only html here</p>',
    })
    expect(decodeMessage(received.raw).html).toBe('<p>Only html here</p>')
  })

  it('delivers a non-ASCII subject and body intact', async () => {
    const subject = 'Grüße aus Zürich ✓ — naïve café'
    const { received } = await deliver({ to: 'ada@example.com', subject, text_body: 'Schöne Grüße ✓' })
    expect(decodeMessage(received.raw).subject).toBe(subject)
    expect(decodeMessage(received.raw).text).toBe('Schöne Grüße ✓')
  })

  it('sends placeholders such as {{name}} literally in subject and bodies', async () => {
    const { received } = await deliver({
      to: 'ada@example.com',
      subject: 'Hello {{name}}',
      text_body: 'Dear {{name}}, your code is {{ code }}',
      html_body: '<p>Dear {{name}}</p>',
    })
    expect(received.headers.get('subject')).toBe('Hello {{name}}')
    expect(decodeMessage(received.raw).text).toBe('Dear {{name}}, your code is {{ code }}')
    expect(decodeMessage(received.raw).html).toBe('<p>Dear {{name}}</p>')
  })
})

describe('POST /send: recipient forms', () => {
  const single = (a: string) => a
  const commaString = (...all: string[]) => all.join(' ,  ')
  const array = (...all: string[]) => all

  // Every form is used for each of to, cc and bcc across the three cases.
  const cases = [
    {
      name: 'to as one string, cc as a comma-separated string, bcc as an array',
      to: single('t1@example.com'),
      cc: commaString('c1@example.com', 'c2@example.com'),
      bcc: array('b1@example.com', 'b2@example.com'),
      expected: {
        to: ['t1@example.com'],
        cc: ['c1@example.com', 'c2@example.com'],
        bcc: ['b1@example.com', 'b2@example.com'],
      },
    },
    {
      name: 'to as a comma-separated string, cc as an array, bcc as one string',
      to: commaString('t1@example.com', 't2@example.com', 't3@example.com'),
      cc: array('c1@example.com'),
      bcc: single('b1@example.com'),
      expected: {
        to: ['t1@example.com', 't2@example.com', 't3@example.com'],
        cc: ['c1@example.com'],
        bcc: ['b1@example.com'],
      },
    },
    {
      name: 'to as an array, cc as one string, bcc as a comma-separated string',
      to: array('t1@example.com', 't2@example.com'),
      cc: single('c1@example.com'),
      bcc: commaString('b1@example.com', 'b2@example.com'),
      expected: {
        to: ['t1@example.com', 't2@example.com'],
        cc: ['c1@example.com'],
        bcc: ['b1@example.com', 'b2@example.com'],
      },
    },
  ]

  it.each(cases)('$name', async ({ to, cc, bcc, expected }) => {
    const subject = uniqueSubject('Forms')
    const { json, received } = await deliver({ to, cc, bcc, subject, text_body: 'Forms' })
    expect([...received.envelope.to].sort()).toEqual([...expected.to, ...expected.cc, ...expected.bcc].sort())
    expect(addressesIn(received.headers.get('to'))).toEqual(expected.to)
    expect(addressesIn(received.headers.get('cc'))).toEqual(expected.cc)
    // Bcc recipients get the message but appear nowhere in it.
    expect(received.headers.has('bcc')).toBe(false)
    for (const hidden of expected.bcc) expect(received.raw).not.toContain(hidden)

    const row = await outboxRow(json.outboxId)
    expect(row).toMatchObject({
      to_addresses: expected.to,
      cc_addresses: expected.cc,
      bcc_addresses: expected.bcc,
    })
  })
})

describe('POST /send: at most 10 recipients across to, cc and bcc', () => {
  const addresses = (prefix: string, n: number) =>
    Array.from({ length: n }, (_, i) => `${prefix}${i + 1}@example.com`)

  it('accepts exactly 10', async () => {
    const to = addresses('to', 4)
    const cc = addresses('cc', 3)
    const bcc = addresses('bcc', 3)
    const { received } = await deliver({
      to,
      cc: cc.join(', '),
      bcc,
      subject: uniqueSubject('Ten'),
      text_body: 'x',
    })
    expect([...received.envelope.to].sort()).toEqual([...to, ...cc, ...bcc].sort())
  })

  it('refuses 11 with 400 TOO_MANY_RECIPIENTS and sends nothing', async () => {
    const { status, json } = await refused({
      to: addresses('to', 4),
      cc: addresses('cc', 3).join(', '),
      bcc: addresses('bcc', 4),
      subject: uniqueSubject('Eleven'),
      text_body: 'x',
    })
    expect(status).toBe(400)
    expect(json).toEqual({
      code: 'TOO_MANY_RECIPIENTS',
      message: humanText,
      ...(json.details === undefined ? {} : { details: expect.any(Object) }),
    })
  })

  it('counts 11 in `to` alone as too many', async () => {
    const { status, json } = await refused({ to: addresses('to', 11), subject: 'Eleven to', text_body: 'x' })
    expect(status).toBe(400)
    expect(json.code).toBe('TOO_MANY_RECIPIENTS')
  })
})

describe('POST /send: outbox record', () => {
  it('records every send: status sent, connection, recipients, subject, message id, sent_at', async () => {
    const subject = uniqueSubject('Outbox')
    const { json } = await deliver({
      to: ['ada@example.com', 'alan@example.com'],
      cc: 'grace@example.com',
      bcc: 'hidden@example.com',
      subject,
      text_body: 'Body',
    })
    const row = await outboxRow(json.outboxId)
    expect(row).toEqual({
      status: 'sent',
      account_id: accounts.sender.account.id,
      connection_id: accounts.sender.connection?.id,
      to_addresses: ['ada@example.com', 'alan@example.com'],
      cc_addresses: ['grace@example.com'],
      bcc_addresses: ['hidden@example.com'],
      subject,
      message_id: json.messageId,
      sent_at: expect.any(Date),
      error: null,
    })
  })

  it('gives each send its own outbox record', async () => {
    const first = await deliver({ to: 'ada@example.com', subject: uniqueSubject('One'), text_body: 'x' })
    const second = await deliver({ to: 'ada@example.com', subject: uniqueSubject('Two'), text_body: 'x' })
    expect(second.json.outboxId).not.toBe(first.json.outboxId)
    expect(second.json.messageId).not.toBe(first.json.messageId)
    expect((await outboxRow(first.json.outboxId))?.status).toBe('sent')
    expect((await outboxRow(second.json.outboxId))?.status).toBe('sent')
  })
})
