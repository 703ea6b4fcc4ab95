/**
 * The composer makes, at once, the very bytes nodemailer's MailComposer streams out for the same
 * fields: the same headers in the same order, folded and encoded alike, the same transfer
 * encodings and line wrapping, the same structure. MailComposer is the oracle, with the clock
 * stopped and the boundary the composer drew.
 */
import { randomBytes } from 'node:crypto'
import fc from 'fast-check'
import MailComposer from 'nodemailer/lib/mail-composer'
import type Mail from 'nodemailer/lib/mailer'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { composeMail, composeMessage, type MessageFields } from '../../src/smtp/compose.ts'
import { countTurns } from '../support/event-loop-turns.ts'
import { decodeWords, leaves, parseMime } from '../support/mime.ts'

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] })
  vi.setSystemTime(new Date('2026-11-24T10:20:30.456Z'))
})
afterEach(() => {
  vi.useRealTimers()
})

/** What MailComposer makes of the fields, given the composer's boundary (if it drew one). */
async function nodemailerBytes(fields: MessageFields, ours: Buffer): Promise<Buffer> {
  const baseBoundary = /boundary="--_NmP-([0-9a-f]{16})-Part_1"/.exec(ours.toString())?.[1]
  const mail: Mail.Options & { baseBoundary?: string } = {
    ...fields,
    disableFileAccess: true,
    disableUrlAccess: true,
    ...(baseBoundary === undefined ? {} : { baseBoundary }),
  }
  return new MailComposer(mail).compile().build()
}

async function expectSameAsNodemailer(fields: MessageFields): Promise<string> {
  const ours = composeMessage(fields)
  expect(ours.toString()).toBe((await nodemailerBytes(fields, ours)).toString())
  expect(ours).toEqual(await nodemailerBytes(fields, ours))
  return ours.toString()
}

const base: MessageFields = {
  from: 'sender@example.com',
  to: ['ada@example.com'],
  cc: [],
  subject: 'Hello',
  messageId: '<1.abc@example.com>',
}

describe('composeMessage', () => {
  it('makes text and HTML one multipart/alternative message, headers first, Bcc never', async () => {
    const text = await expectSameAsNodemailer({
      ...base,
      to: ['ada@example.com', 'grace@example.com'],
      cc: ['linus@example.com'],
      text: 'Hi Ada,\nsee you.',
      html: '<p>Hi <b>Ada</b></p>',
      replyTo: 'reply@example.com',
      headers: {
        'List-Unsubscribe': '<https://mail.example/u/abc>',
        'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
      },
    })
    expect(text).toMatch(
      /^List-Unsubscribe: <https:\/\/mail\.example\/u\/abc>\r\nList-Unsubscribe-Post: .*\r\nFrom: sender@example\.com\r\nTo: ada@example\.com, grace@example\.com\r\nCc: linus@example\.com\r\nReply-To: reply@example\.com\r\nSubject: Hello\r\nMessage-ID: <1\.abc@example\.com>\r\nDate: Tue, 24 Nov 2026 10:20:30 \+0000\r\nMIME-Version: 1\.0\r\nContent-Type: multipart\/alternative;\r\n boundary="--_NmP-[0-9a-f]{16}-Part_1"\r\n\r\n/,
    )
    expect(text).toContain(
      'Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 7bit\r\n\r\nHi Ada,\nsee you.\r\n',
    )
    expect(text).not.toContain('Bcc')
  })

  it('makes a single part of text alone, of HTML alone, and an empty text part of neither', async () => {
    expect(await expectSameAsNodemailer({ ...base, text: 'Only text' })).toContain(
      'Content-Transfer-Encoding: 7bit\r\nDate: Tue, 24 Nov 2026 10:20:30 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nOnly text\r\n',
    )
    expect(await expectSameAsNodemailer({ ...base, html: '<p>Only HTML</p>' })).toContain(
      'Content-Type: text/html; charset=utf-8',
    )
    expect(await expectSameAsNodemailer({ ...base, text: '', html: '' })).toMatch(
      /MIME-Version: 1\.0\r\nContent-Type: text\/plain\r\n\r\n$/,
    )
  })

  it('encodes non-ASCII subjects and bodies, and wraps long lines, as nodemailer does', async () => {
    const quoted = await expectSameAsNodemailer({
      ...base,
      subject: `Café déjà vu — ${'très long sujet '.repeat(8)}`,
      text: `Crème brûlée ${'mostly latin text '.repeat(10)}\r\nend   `,
    })
    expect(quoted).toContain('Subject: =?UTF-8?Q?Caf=C3=A9')
    expect(quoted).toContain('Content-Transfer-Encoding: quoted-printable')
    const base64 = await expectSameAsNodemailer({
      ...base,
      subject: '件名',
      text: 'こんにちは世界'.repeat(30),
    })
    expect(base64).toContain('Subject: =?UTF-8?B?')
    expect(base64).toContain('Content-Transfer-Encoding: base64')
    await expectSameAsNodemailer({ ...base, text: `${'x'.repeat(200)}\n${'y '.repeat(100)}` })
  })

  it('encodes a body larger than the encoders take in one slice, trailing blanks included', async () => {
    await expectSameAsNodemailer({
      ...base,
      text: `${'é mot '.repeat(30_000)} \t `,
      html: `<p>${'ü'.repeat(70_000)}</p>\r`,
    })
    await expectSameAsNodemailer({ ...base, text: 'ends with a carriage return\r' })
  })

  it("writes several Reply-To addresses and a caller's extra headers, non-ASCII values as encoded words, as nodemailer does", async () => {
    const text = await expectSameAsNodemailer({
      ...base,
      text: 'Hi',
      replyTo: ['help@example.com', 'desk@example.com'],
      headers: {
        'List-Unsubscribe': '<https://mail.example/u/abc>',
        'In-Reply-To': '<t-1@example.com>',
        'X-Note': 'Grüße, 日本',
      },
    })
    expect(text).toContain('\r\nReply-To: help@example.com, desk@example.com\r\n')
    expect(text).toContain('\r\nIn-Reply-To: <t-1@example.com>\r\n')
    const note = /\r\nX-Note: (.*)\r\n/.exec(text)?.[1] ?? ''
    expect(note).toMatch(/^=\?UTF-8\?[BQ]\?[\x20-\x7e]+$/)
    expect(decodeWords(note)).toBe('Grüße, 日本')
  })

  it('nests files: multipart/mixed around the bodies, inline ones beside the HTML in multipart/related', async () => {
    const bytes = Buffer.from([0, 13, 10, 255, 10, 13])
    const fields = { ...base, text: 'Hi', html: '<img src="cid:pic">' }
    const file = { filename: 'raw.txt', contentType: 'text/plain', content: bytes }
    const inline = { filename: 'pic.png', contentType: 'image/png', contentId: 'pic', content: bytes }
    const root = parseMime((await composeMail({ ...fields, attachments: [inline, file] })).toString())
    expect(root.type).toBe('multipart/mixed')
    const [alternative, attached] = root.parts
    expect(alternative?.parts.map((part) => part.type)).toEqual(['text/plain', 'multipart/related'])
    const related = alternative?.parts[1]
    expect(related?.parts[1]?.headers.get('content-id')).toBe('<pic>')
    expect(related?.parts[1]?.headers.get('content-disposition')).toBe('inline; filename=pic.png')
    expect(attached?.headers.get('content-transfer-encoding')).toBe('base64')
    expect(
      leaves(root)
        .slice(-2)
        .map((part) => part.content),
    ).toEqual([bytes, bytes])
    // Without files, the very bytes of composeMessage.
    const plain = await composeMail(fields)
    expect(plain.toString().replace(/_NmP-[0-9a-f]{16}/g, '')).toBe(
      composeMessage(fields)
        .toString()
        .replace(/_NmP-[0-9a-f]{16}/g, ''),
    )
  })

  it('encodes 10 MiB of files over many turns of the event loop, to the very bytes', async () => {
    const bytes = randomBytes(10 * 1024 * 1024)
    const turns = countTurns()
    const raw = await composeMail({
      ...base,
      text: 'Hi',
      attachments: [{ filename: 'big.bin', contentType: 'application/octet-stream', content: bytes }],
    })
    turns.stop()
    expect(leaves(parseMime(raw.toString())).at(-1)?.content.equals(bytes)).toBe(true)
    // A turn at least every 192 KiB of the file: 53 of them.
    expect(turns.count).toBeGreaterThanOrEqual(53)
  })

  it('agrees with nodemailer on generated messages', async () => {
    const text = fc.oneof(
      fc.string({ maxLength: 400 }),
      fc.string({ unit: 'grapheme', maxLength: 300 }),
      fc.string({ unit: 'binary-ascii', maxLength: 300 }),
      fc
        .array(fc.constantFrom('a', 'é', ' ', '\t', '\n', '\r\n', '\r', '.', '=', 'x'.repeat(80), '日本'), {
          maxLength: 200,
        })
        .map((pieces) => pieces.join('')),
    )
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          {
            from: fc.emailAddress(),
            to: fc.array(fc.emailAddress(), { minLength: 1, maxLength: 10 }),
            cc: fc.array(fc.emailAddress(), { maxLength: 5 }),
            subject: text,
            text,
            html: text,
            replyTo: fc.emailAddress(),
            headers: fc.constant({ 'List-Unsubscribe': '<https://mail.example/u/abc>' }),
            messageId: fc.stringMatching(/^<[0-9a-f]{8}\.[0-9]{1,6}@[a-z]{1,10}\.example>$/),
          },
          { requiredKeys: ['from', 'to', 'cc', 'subject', 'messageId'] },
        ),
        async (fields) => {
          const ours = composeMessage(fields)
          expect(ours.toString()).toBe((await nodemailerBytes(fields, ours)).toString())
        },
      ),
      { numRuns: 400 },
    )
  })
})
