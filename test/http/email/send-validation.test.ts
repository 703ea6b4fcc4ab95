/**
 * POST /send refuses what it cannot take: the validation body, addresses that are not RFC 5321
 * mailboxes and CR or LF that would inject headers, each checked before a connection is chosen.
 */
import { describe, expect, it } from 'vitest'
import { useTestApp } from '../../support/app.ts'
import { humanText, validationBody } from '../../support/matchers.ts'
import { SENDER, uniqueSubject, useSendRequest } from '../../support/send-request.ts'

const app = useTestApp()
const { accounts, deliver, refused } = useSendRequest(app)

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
    const { status, json } = await refused({ to: 'ada@example.com', text_body: 'Body' }, accounts.bare.key)
    expect(status).toBe(400)
    expect(json).toEqual(validationBody([{ path: ['subject'], code: 'invalid_type' }]))
  })

  it('checks TOO_MANY_RECIPIENTS before choosing a connection', async () => {
    const to = Array.from({ length: 11 }, (_, i) => `r${i}@example.com`)
    const { status, json } = await refused({ to, subject: 'Hi', text_body: 'Body' }, accounts.bare.key)
    expect(status).toBe(400)
    expect(json.code).toBe('TOO_MANY_RECIPIENTS')
  })

  it('with a valid body the same account gets 403 NO_CONNECTION', async () => {
    const { status, json } = await refused(
      { to: 'ada@example.com', subject: 'Hi', text_body: 'Body' },
      accounts.bare.key,
    )
    expect(status).toBe(403)
    expect(json).toEqual({ code: 'NO_CONNECTION', message: humanText })
  })
})
