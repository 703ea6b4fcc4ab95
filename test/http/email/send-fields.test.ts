/**
 * POST /send with reply_to, extra headers and attachments: what the SMTP server receives (the
 * bytes, taken apart as a mail reader would), and every rule of the three fields refused with
 * the validation body at its path, each bound on both sides.
 */
import { createHash, randomBytes } from 'node:crypto'
import { beforeAll, describe, expect, it } from 'vitest'
import { useTestApp } from '../../support/app.ts'
import { validationBody } from '../../support/matchers.ts'
import { decodeWords, leaves, type MimePart, parseMime } from '../../support/mime.ts'
import { postSend, type Sender, startSender } from '../../support/sending.ts'

const app = useTestApp()
let sender: Sender

beforeAll(async () => {
  sender = await startSender(app, 'fields')
})

const MAIL = { to: 'reader@example.com', subject: 'Fields', text_body: 'Hello' }

/** Sends `fields` beside a plain mail; the message the sink received. */
async function sent(fields: Record<string, unknown>) {
  const before = sender.sink.messages.length
  const reply = await postSend(app, sender.key, { ...MAIL, ...fields })
  expect(reply.status, JSON.stringify(reply.body)).toBe(200)
  expect(sender.sink.messages).toHaveLength(before + 1)
  const message = sender.sink.messages.at(-1)
  if (!message) throw new Error('no message')
  return message
}

/** The validation body the send answers, nothing received. */
async function refused(fields: Record<string, unknown>) {
  const before = sender.sink.messages.length
  const reply = await postSend(app, sender.key, { ...MAIL, ...fields })
  expect(sender.sink.messages).toHaveLength(before)
  return { status: reply.status, body: reply.body }
}

const invalid = (...issues: { path: (string | number)[]; code: string }[]) => ({
  status: 400,
  body: validationBody(issues),
})

const addresses = (count: number) => Array.from({ length: count }, (_, i) => `r${i}@example.com`)

describe('reply_to', () => {
  it('becomes the Reply-To header in each of the three forms, never a recipient', async () => {
    const one = await sent({ reply_to: 'help@example.com' })
    expect(one.headers.get('reply-to')).toBe('help@example.com')
    expect(one.envelope.to).toEqual(['reader@example.com'])
    const listed = await sent({ reply_to: 'a@example.com, b@example.com' })
    expect(listed.headers.get('reply-to')).toBe('a@example.com, b@example.com')
    const array = await sent({ reply_to: ['c@example.com', 'd@example.com'] })
    expect(array.headers.get('reply-to')).toBe('c@example.com, d@example.com')
  })

  it('takes 10 addresses beside 10 recipients, and refuses 11', async () => {
    const message = await sent({ to: addresses(10), reply_to: addresses(10) })
    expect(message.envelope.to).toHaveLength(10)
    expect(message.headers.get('reply-to')?.split(', ')).toEqual(addresses(10))
    expect(await refused({ reply_to: addresses(11) })).toEqual(
      invalid({ path: ['reply_to'], code: 'too_big' }),
    )
    expect(await refused({ reply_to: addresses(11).join(',') })).toEqual(
      invalid({ path: ['reply_to'], code: 'too_big' }),
    )
  })

  it('refuses a bad address at its place', async () => {
    expect(await refused({ reply_to: ['a@example.com', 'not an address'] })).toEqual(
      invalid({ path: ['reply_to', 1], code: 'invalid_format' }),
    )
    expect(await refused({ reply_to: 'a@example.com,' })).toEqual(
      invalid({ path: ['reply_to'], code: 'invalid_format' }),
    )
  })
})

describe('headers', () => {
  it('are sent as given, threading and List-Unsubscribe included, non-ASCII values encoded', async () => {
    const message = await sent({
      headers: {
        'In-Reply-To': '<ticket-1@support.example>',
        References: '<ticket-0@support.example> <ticket-1@support.example>',
        'X-Ticket': '4411',
        'X-Note': 'Grüße aus Köln ✉',
        'List-Unsubscribe': '<https://example.com/unsubscribe/1>',
        'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
      },
    })
    expect(message.headers.get('in-reply-to')).toBe('<ticket-1@support.example>')
    expect(message.headers.get('references')).toBe('<ticket-0@support.example> <ticket-1@support.example>')
    expect(message.headers.get('x-ticket')).toBe('4411')
    expect(message.headers.get('list-unsubscribe')).toBe('<https://example.com/unsubscribe/1>')
    expect(message.headers.get('list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click')
    const note = message.headers.get('x-note') ?? ''
    expect(note).toMatch(/^[\x20-\x7e]+$/)
    expect(note).toMatch(/=\?UTF-8\?[BQ]\?/i)
    expect(decodeWords(note)).toBe('Grüße aus Köln ✉')
  })

  it('refuses every name Mailroom sets, in any letter case, each at its name', async () => {
    const owned = [
      'From',
      'SENDER',
      'to',
      'Cc',
      'bCC',
      'Reply-To',
      'subject',
      'DATE',
      'Message-Id',
      'mime-version',
      'Content-Type',
      'content-transfer-encoding',
      'Content-Anything',
      'Return-Path',
      'received',
      'Dkim-Signature',
    ]
    const headers = Object.fromEntries(owned.map((name) => [name, 'x']))
    expect(await refused({ headers })).toEqual(
      invalid(...owned.map((name) => ({ path: ['headers', name], code: 'custom' }))),
    )
  })

  it('takes 50 fields and refuses 51', async () => {
    const fields = (count: number) =>
      Object.fromEntries(Array.from({ length: count }, (_, i) => [`X-F${i}`, `${i}`]))
    const message = await sent({ headers: fields(50) })
    expect(message.headers.get('x-f49')).toBe('49')
    expect(await refused({ headers: fields(51) })).toEqual(invalid({ path: ['headers'], code: 'too_big' }))
  })

  it('takes a name of 76 field-name characters and a value of 998, and refuses one more of each', async () => {
    const name = `X-${'n'.repeat(74)}`
    const message = await sent({ headers: { [name]: 'v'.repeat(998), 'X-!#$%&*+.^_`|~': 'odd' } })
    expect(message.headers.get(name.toLowerCase())).toBe('v'.repeat(998))
    expect(message.headers.get('x-!#$%&*+.^_`|~')).toBe('odd')
    expect(await refused({ headers: { [`${name}n`]: 'v' } })).toEqual(
      invalid({ path: ['headers', `${name}n`], code: 'invalid_format' }),
    )
    expect(await refused({ headers: { 'X-Long': 'v'.repeat(999) } })).toEqual(
      invalid({ path: ['headers', 'X-Long'], code: 'too_big' }),
    )
  })

  it('refuses names outside the field-name characters and values holding CR, LF or NUL', async () => {
    for (const name of ['', 'X Space', 'X:Colon', 'X-Ü', 'X-\t']) {
      expect(await refused({ headers: { [name]: 'v' } }), name).toEqual(
        invalid({ path: ['headers', name], code: 'invalid_format' }),
      )
    }
    for (const value of ['a\r\nBcc: victim@example.com', 'a\nb', 'a\rb', 'a\0b']) {
      expect(await refused({ headers: { 'X-Bad': value } }), value).toEqual(
        invalid({ path: ['headers', 'X-Bad'], code: 'invalid_format' }),
      )
    }
  })

  it('refuses a name given twice in different letter cases', async () => {
    expect(await refused({ headers: { 'X-Twice': 'a', 'x-twice': 'b' } })).toEqual(
      invalid({ path: ['headers', 'x-twice'], code: 'custom' }),
    )
  })
})

/** The message's files: its leaves with a Content-Disposition. */
function files(message: { raw: string }): MimePart[] {
  return leaves(parseMime(message.raw)).filter((part) => part.headers.has('content-disposition'))
}

describe('attachments', () => {
  it('reach the server byte for byte, in multipart/mixed around the bodies, typed by extension by default', async () => {
    const pdf = randomBytes(4000)
    const text = Buffer.from('line one\nline two\r\nno final break  ')
    const message = await sent({
      html_body: '<p>Hello</p>',
      attachments: [
        { filename: 'invoice.pdf', content: pdf.toString('base64') },
        { filename: 'notes.txt', content: text.toString('base64') },
        { filename: 'README', content: 'AAEC' },
        { filename: 'data.bin', content: 'AAEC', content_type: 'application/x-custom' },
        { filename: 'empty.csv', content: '' },
      ],
    })
    const root = parseMime(message.raw)
    expect(root.type).toBe('multipart/mixed')
    expect(root.parts[0]?.type).toBe('multipart/alternative')
    expect(root.parts[0]?.parts.map((part) => part.type)).toEqual(['text/plain', 'text/html'])
    const attached = files(message)
    expect(attached.map((part) => [part.type, part.headers.get('content-disposition')])).toEqual([
      ['application/pdf', 'attachment; filename=invoice.pdf'],
      ['text/plain', 'attachment; filename=notes.txt'],
      ['application/octet-stream', 'attachment; filename=README'],
      ['application/x-custom', 'attachment; filename=data.bin'],
      ['text/csv', 'attachment; filename=empty.csv'],
    ])
    expect(attached.map((part) => part.content)).toEqual([
      pdf,
      text,
      Buffer.from([0, 1, 2]),
      Buffer.from([0, 1, 2]),
      Buffer.alloc(0),
    ])
  })

  it('makes a file with content_id an inline part the HTML shows by cid:, in multipart/related', async () => {
    const logo = randomBytes(300)
    const message = await sent({
      html_body: '<p><img src="cid:logo@example.com"></p>',
      attachments: [
        { filename: 'logo.png', content: logo.toString('base64'), content_id: 'logo@example.com' },
        { filename: 'terms.pdf', content: 'JVBERg==' },
      ],
    })
    const root = parseMime(message.raw)
    expect(root.type).toBe('multipart/mixed')
    const alternative = root.parts[0]
    expect(alternative?.type).toBe('multipart/alternative')
    const related = alternative?.parts[1]
    expect(related?.type).toBe('multipart/related')
    expect(related?.parts.map((part) => part.type)).toEqual(['text/html', 'image/png'])
    const inline = related?.parts[1]
    expect(inline?.headers.get('content-id')).toBe('<logo@example.com>')
    expect(inline?.headers.get('content-disposition')).toMatch(/^inline\b/)
    expect(inline?.content).toEqual(logo)
    expect(root.parts[1]?.headers.get('content-disposition')).toMatch(/^attachment\b/)
  })

  it('takes 20 files and refuses 21', async () => {
    const list = (count: number) =>
      Array.from({ length: count }, (_, i) => ({ filename: `f${i}.bin`, content: 'AA==' }))
    expect(files(await sent({ attachments: list(20) }))).toHaveLength(20)
    expect(await refused({ attachments: list(21) })).toEqual(
      invalid({ path: ['attachments'], code: 'too_big' }),
    )
  })

  it('takes a filename of 1 to 255 characters without / \\ CR LF or NUL', async () => {
    const name = `${'n'.repeat(251)}.txt`
    expect(files(await sent({ attachments: [{ filename: name, content: 'AA==' }] }))).toHaveLength(1)
    const bad = [`n${name}`, '', 'a/b.txt', 'a\\b.txt', 'a\rb', 'a\nb', 'a\0b']
    for (const filename of bad) {
      const code = filename.length > 255 ? 'too_big' : filename === '' ? 'too_small' : 'invalid_format'
      expect(await refused({ attachments: [{ filename, content: 'AA==' }] }), filename).toEqual(
        invalid({ path: ['attachments', 0, 'filename'], code }),
      )
    }
  })

  it('refuses content that is not strict base64 at its path', async () => {
    for (const content of ['AAE', 'AA=A', 'AA==AA==', 'AAEC\n', 'AA-_', 'AA E', 'AAF=', 'Zm9v!A==']) {
      expect(
        await refused({
          attachments: [
            { filename: 'ok.bin', content: 'AA==' },
            { filename: 'f', content },
          ],
        }),
        content,
      ).toEqual(invalid({ path: ['attachments', 1, 'content'], code: 'invalid_format' }))
    }
  })

  it('refuses two files with the same content_id, and a content_id or content_type of the wrong shape', async () => {
    const file = (extra: Record<string, string>) => ({ filename: 'a.png', content: 'AA==', ...extra })
    expect(
      await refused({ attachments: [file({ content_id: 'same' }), file({ content_id: 'same' })] }),
    ).toEqual(invalid({ path: ['attachments', 1, 'content_id'], code: 'custom' }))
    expect(await refused({ attachments: [file({ content_id: '<a@b>' })] })).toEqual(
      invalid({ path: ['attachments', 0, 'content_id'], code: 'invalid_format' }),
    )
    expect(await refused({ attachments: [file({ content_type: 'text/plain; charset=utf-8' })] })).toEqual(
      invalid({ path: ['attachments', 0, 'content_type'], code: 'invalid_format' }),
    )
  })
})

describe("what a sent email's record keeps", () => {
  it('its reply-to addresses, extra headers and each file summed up, never the bytes', async () => {
    const bytes = randomBytes(500)
    const reply = await postSend(app, sender.key, {
      ...MAIL,
      reply_to: ['desk@example.com', 'help@example.com'],
      headers: { 'X-Ticket': '9' },
      attachments: [{ filename: 'a.pdf', content: bytes.toString('base64'), content_id: 'a' }],
    })
    const [record] = await app.services.sql<{ reply_to: string; headers: unknown; attachments: unknown }[]>`
      select reply_to, headers, attachments from outbox where id = ${reply.body.outboxId as number}`
    expect(record).toEqual({
      reply_to: 'desk@example.com, help@example.com',
      headers: { 'X-Ticket': '9' },
      attachments: [
        {
          filename: 'a.pdf',
          content_type: 'application/pdf',
          size: 500,
          sha256: createHash('sha256').update(bytes).digest('hex'),
          content_id: 'a',
        },
      ],
    })
    const [{ count } = { count: -1 }] = await app.services.sql<{ count: number }[]>`
      select count(*)::int as count from outbox_attachment_contents`
    expect(count).toBe(0)
  })
})

describe('the size of an email with files', () => {
  const LIMIT = 10 * 1024 * 1024

  it('takes files of 10 MiB in all, delivered exactly, and refuses one byte more', async () => {
    const bytes = randomBytes(LIMIT)
    const halves = [bytes.subarray(0, LIMIT / 2), bytes.subarray(LIMIT / 2)]
    const message = await sent({
      attachments: halves.map((half, i) => ({ filename: `part${i}.bin`, content: half.toString('base64') })),
    })
    expect(Buffer.concat(files(message).map((part) => part.content)).equals(bytes)).toBe(true)
    const over = [
      { filename: 'a.bin', content: halves[0]?.toString('base64') },
      {
        filename: 'b.bin',
        content: Buffer.concat([halves[1] as Buffer, Buffer.from([7])]).toString('base64'),
      },
    ]
    expect(await refused({ attachments: over })).toEqual(invalid({ path: ['attachments'], code: 'too_big' }))
  })

  it('takes a body of 15 MiB on /send, refuses one byte more, and keeps the other limits', async () => {
    const MAIL_LIMIT = 15 * 1024 * 1024
    const padded = (json: string, bytes: number) => json + ' '.repeat(bytes - Buffer.byteLength(json))
    const body = JSON.stringify(MAIL)
    const post = (path: string, text: string) => app.request(path, { key: sender.key, body: text })
    expect((await post('/send', padded(body, MAIL_LIMIT))).status).toBe(200)
    expect((await post('/send', padded(body, MAIL_LIMIT + 1))).status).toBe(413)
    const template = '{"name":"Big","subject":"s","text_body":"t"}'
    expect((await post('/templates', padded(template, 10 * 1024 * 1024 + 1))).status).toBe(413)
  })
})
