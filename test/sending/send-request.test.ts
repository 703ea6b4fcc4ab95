import { beforeAll, describe, expect, it } from 'vitest'
import { type SeededAccount, seedAccount, useTestApp } from '../support/app.ts'
import { decodeMessage } from '../support/batches.ts'
import { humanText, validationBody } from '../support/matchers.ts'
import type { ReceivedMessage, SmtpSink } from '../support/smtp-sink.ts'

// Contract: POST /send — the request body (recipients, validation, limits, CR/LF safety), the
// success body, what reaches the SMTP server and the outbox record every send leaves.

const SENDER = 'sender@mailroom-request.example'

const app = useTestApp()
let sink: SmtpSink
let sender: SeededAccount
/** An account without any connection. */
let bare: SeededAccount

beforeAll(async () => {
  sink = await app.sink({ port: 465 })
  sender = await seedAccount(app, {
    plan: 'pro',
    connection: { ...sink.login, from: SENDER, rate: 6000 },
  })
  bare = await seedAccount(app, { plan: 'pro' })
})

function send(body: unknown, key = sender.key) {
  return app.request('/send', { method: 'POST', key, body })
}

/** A send expected to succeed; returns the body and what the sink received for it. */
async function deliver(body: Record<string, unknown>) {
  const before = sink.messages.length
  const res = await send(body)
  const json = await res.json()
  expect(res.status, JSON.stringify(json)).toBe(200)
  expect(sink.messages.length).toBe(before + 1)
  const received = sink.messages[before] as ReceivedMessage
  return { json, received }
}

/** A send expected to be refused; asserts nothing reached the sink. */
async function refused(body: unknown, key = sender.key) {
  const before = sink.messages.length
  const res = await send(body, key)
  const json = await res.json()
  expect(sink.messages.length).toBe(before)
  return { status: res.status, json }
}

function addressesIn(header: string | undefined): string[] {
  return (header ?? '').match(/[^\s<>,"]+@[^\s<>,"]+/g) ?? []
}

let subjectSeq = 0
function uniqueSubject(label: string) {
  return `${label} #${++subjectSeq}`
}

async function outboxRow(id: number) {
  const [row] = await app.services.sql<
    {
      status: string
      account_id: number
      connection_id: number | null
      to_addresses: string[]
      cc_addresses: string[]
      bcc_addresses: string[]
      subject: string
      message_id: string
      sent_at: Date | null
      error: string | null
    }[]
  >`select status, account_id, connection_id, to_addresses, cc_addresses, bcc_addresses, subject,
           message_id, sent_at, error
    from outbox where id = ${id}`
  return row
}

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

describe('POST /send: validation body', () => {
  const valid = { to: 'ada@example.com', subject: 'Valid', text_body: 'Body' }

  const cases: Array<{
    name: string
    body: Record<string, unknown>
    issues: Array<{ path: Array<string | number>; code: string }>
  }> = [
    {
      name: 'missing `to`',
      body: { subject: 'Hi', text_body: 'Body' },
      issues: [{ path: ['to'], code: 'invalid_union' }],
    },
    {
      name: '`to` as an empty string',
      body: { ...valid, to: '' },
      issues: [{ path: ['to'], code: 'too_small' }],
    },
    {
      name: '`to` as an empty array',
      body: { ...valid, to: [] },
      issues: [{ path: ['to'], code: 'too_small' }],
    },
    {
      name: 'missing `subject`',
      body: { to: 'ada@example.com', text_body: 'Body' },
      issues: [{ path: ['subject'], code: 'invalid_type' }],
    },
    {
      name: 'empty `subject`',
      body: { ...valid, subject: '' },
      issues: [{ path: ['subject'], code: 'too_small' }],
    },
    {
      name: 'neither text_body nor html_body',
      body: { to: 'ada@example.com', subject: 'Hi' },
      issues: [{ path: [], code: 'custom' }],
    },
    {
      name: 'an invalid address in the array form',
      body: { ...valid, to: ['ada@example.com', 'not-an-address'] },
      issues: [{ path: ['to', 1], code: 'invalid_format' }],
    },
    {
      name: 'an invalid address in the comma-separated form',
      body: { ...valid, to: 'ada@example.com, not-an-address' },
      issues: [{ path: ['to'], code: 'invalid_format' }],
    },
    {
      name: 'an invalid address in cc',
      body: { ...valid, cc: ['grace@example.com', 'grace-at-example.com'] },
      issues: [{ path: ['cc', 1], code: 'invalid_format' }],
    },
    {
      name: '`to` of the wrong type (number)',
      body: { ...valid, to: 42 },
      issues: [{ path: ['to'], code: 'invalid_union' }],
    },
    {
      name: '`subject` of the wrong type (number)',
      body: { ...valid, subject: 7 },
      issues: [{ path: ['subject'], code: 'invalid_type' }],
    },
  ]

  it.each(cases)('$name → 400 validation body, nothing sent', async ({ body, issues }) => {
    const { status, json } = await refused(body)
    expect(status).toBe(400)
    expect(json).toEqual(validationBody(issues))
  })
})

describe('POST /send: addresses are RFC 5321 mailboxes', () => {
  // Every atext character of a Dot-string local part, `=` among them (VERP and SRS bounce addresses).
  it.each([
    'a=b@example.com',
    'bounces+srs=x=example.org@example.com',
    'first/last@example.com',
    "!#$%&'*+-/=?^_`{|}~@example.com",
    'a.b.c@sub.example.com',
  ])('delivers to %s as written', async (address) => {
    const { received } = await deliver({ to: [address], subject: uniqueSubject('atext'), text_body: 'Body' })
    expect(received.envelope.to).toEqual([address])
    expect(received.headers.get('to')).toContain(address)
  })

  it.each([
    ['a leading dot', '.ada@example.com'],
    ['a trailing dot', 'ada.@example.com'],
    ['two dots in a row', 'ada..lovelace@example.com'],
    ['a quoted local part', '"ada"@example.com'],
    ['a space', 'ada lovelace@example.com'],
    ['a domain without a dot', 'ada@localhost'],
    ['an address literal', 'ada@[127.0.0.1]'],
    ['a non-ASCII local part', 'adá@example.com'],
  ])('refuses %s with 400', async (_label, address) => {
    const { status, json } = await refused({ to: [address], subject: 'Hi', text_body: 'Body' })
    expect(status).toBe(400)
    expect(json).toEqual(validationBody([{ path: ['to', 0], code: 'invalid_format' }]))
  })
})

describe('POST /send: CR and LF never inject headers', () => {
  it.each([
    ['CRLF + Bcc', 'Hi\r\nBcc: evil@example.com'],
    ['LF + X-Injected', 'Hi\nX-Injected: 1'],
  ])('subject with %s is delivered with no injected header or recipient', async (_label, subject) => {
    const { received } = await deliver({ to: 'ada@example.com', subject, text_body: 'Body' })
    expect(received.envelope.to).toEqual(['ada@example.com'])
    expect(received.headers.has('bcc')).toBe(false)
    expect(received.headers.has('x-injected')).toBe(false)
    expect(received.raw).not.toMatch(/^(Bcc|X-Injected):/im)
    const header = received.headers.get('subject') ?? ''
    expect(header).not.toMatch(/[\r\n]/)
    expect(header.startsWith('Hi')).toBe(true)
  })

  it.each([
    ['`to` as a string', { to: 'ada@example.com\r\nBcc: evil@example.com' }, ['to']],
    ['`to` in an array', { to: ['ada@example.com\nBcc: evil@example.com'] }, ['to', 0]],
    ['`cc` as a string', { cc: 'grace@example.com\r\nX-Injected: 1' }, ['cc']],
    ['a comma string, trailing', { to: 'grace@example.com, ada@example.com\r\n' }, ['to']],
    ['`bcc` in an array', { bcc: ['grace@example.com\r\nX-Injected: 1'] }, ['bcc', 0]],
  ])('an address with CR/LF in %s is refused with 400', async (_label, patch, path) => {
    const { status, json } = await refused({
      to: 'ada@example.com',
      subject: 'Hi',
      text_body: 'Body',
      ...patch,
    })
    expect(status).toBe(400)
    expect(json).toEqual(validationBody([{ path, code: 'invalid_format' }]))
  })

  it('a `from` with CR/LF is refused with 400', async () => {
    const { status, json } = await refused({
      from: `${SENDER}\r\nBcc: evil@example.com`,
      to: 'ada@example.com',
      subject: 'Hi',
      text_body: 'Body',
    })
    expect(status).toBe(400)
    expect(json).toEqual(validationBody([{ path: ['from'], code: 'invalid_format' }]))
  })
})

describe('POST /send: order of checks', () => {
  it('validates the body before choosing a connection (no connection: 400, not 403)', async () => {
    const { status, json } = await refused({ to: 'ada@example.com', text_body: 'Body' }, bare.key)
    expect(status).toBe(400)
    expect(json).toEqual(validationBody([{ path: ['subject'], code: 'invalid_type' }]))
  })

  it('checks TOO_MANY_RECIPIENTS before choosing a connection', async () => {
    const to = Array.from({ length: 11 }, (_, i) => `r${i}@example.com`)
    const { status, json } = await refused({ to, subject: 'Hi', text_body: 'Body' }, bare.key)
    expect(status).toBe(400)
    expect(json.code).toBe('TOO_MANY_RECIPIENTS')
  })

  it('with a valid body the same account gets 403 NO_CONNECTION', async () => {
    const { status, json } = await refused(
      { to: 'ada@example.com', subject: 'Hi', text_body: 'Body' },
      bare.key,
    )
    expect(status).toBe(403)
    expect(json).toEqual({ code: 'NO_CONNECTION', message: humanText })
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
      account_id: sender.account.id,
      connection_id: sender.connection?.id,
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
