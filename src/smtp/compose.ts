import { randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import {
  base64Body,
  buildHeaderValue,
  encodeHeaderValue,
  foldLines,
  mailComposerBytes,
  quotedPrintableBody,
  transferEncodingOf,
} from './nodemailer-internals.ts'

/** What a message says: every field the service composes, nothing a caller could add. */
export interface MessageFields {
  from: string
  to: string[]
  cc: string[]
  subject: string
  text?: string
  html?: string
  replyTo?: string | string[]
  /**
   * The service's own headers (List-Unsubscribe), then the caller's checked extra ones, in this
   * order, before the others.
   */
  headers?: Record<string, string>
  messageId: string
}

/** A file of the message, its bytes as the caller gave them. */
export interface FileAttachment {
  filename: string
  contentType: string
  /** Set: an inline part (Content-ID and Content-Disposition: inline) the HTML shows by `cid:`. */
  contentId?: string
  content: Buffer
}

const HEADER_LINE_LENGTH = 76

/**
 * The message as the bytes that go on the wire, in one piece: the bytes nodemailer's MailComposer
 * makes of the same fields (test/smtp/compose.test.ts holds the two equal), made at once rather
 * than through nodemailer's tree of nodes and streams, which cost a quarter of the service's CPU
 * per message (a stream pipeline with an AbortController per part, a random boundary per node,
 * every header key normalised by regular expressions). Handed to a session whole, the message
 * leaves in one write and the end of data in another.
 */
export function composeMessage(fields: MessageFields): Buffer {
  const parts = [
    fields.text ? { type: 'text/plain', content: fields.text } : undefined,
    fields.html ? { type: 'text/html', content: fields.html } : undefined,
  ].filter((part) => part !== undefined)
  const headers = Object.entries(fields.headers ?? {}).map(([key, value]) => header(key, value))
  headers.push(
    header('From', fields.from),
    header('To', fields.to),
    header('Cc', fields.cc),
    header('Reply-To', fields.replyTo),
    header('Subject', fields.subject),
    header('Message-ID', fields.messageId),
  )
  const dateLine = header('Date', new Date().toUTCString().replace(/GMT/, '+0000'))
  const mimeVersion = header('MIME-Version', '1.0')
  const [only] = parts
  if (parts.length < 2) {
    const part = leaf(only?.type ?? 'text/plain', only?.content ?? '')
    headers.push(part.encodingLine, dateLine, mimeVersion, part.typeLine)
    return message([headerBlock(headers), part.body])
  }
  const boundary = `--_NmP-${randomBytes(8).toString('hex')}-Part_1`
  headers.push(dateLine, mimeVersion, contentTypeLine('multipart/alternative', { boundary }))
  const chunks = [headerBlock(headers)]
  parts.forEach((part, i) => {
    const node = leaf(part.type, part.content)
    chunks.push(
      `${i > 0 ? '\r\n' : ''}--${boundary}\r\n`,
      headerBlock([node.typeLine, node.encodingLine]),
      node.body,
    )
  })
  chunks.push(`\r\n--${boundary}--\r\n`)
  return message(chunks)
}

/**
 * The message's bytes: without attachments, composeMessage's; with them, nodemailer's
 * MailComposer's, which nests the parts (multipart/mixed around multipart/alternative, and
 * multipart/related holding the HTML and its inline parts) and streams their encoding. Every
 * file goes in base64, so its bytes reach the server exactly, line endings included.
 */
export async function composeMail(
  fields: MessageFields & { attachments?: FileAttachment[] },
): Promise<Buffer> {
  const { attachments, ...message } = fields
  if (!attachments?.length) return composeMessage(message)
  return mailComposerBytes({
    ...message,
    disableFileAccess: true,
    disableUrlAccess: true,
    attachments: attachments.map((file) => ({
      filename: file.filename,
      content: Readable.from(slices(file.content), { objectMode: false }),
      contentType: file.contentType,
      contentTransferEncoding: 'base64',
      ...(file.contentId === undefined
        ? { contentDisposition: 'attachment' as const }
        : { cid: file.contentId, contentDisposition: 'inline' as const }),
    })),
  })
}

/** Bytes of a file encoded on one turn of the event loop. */
const FILE_SLICE = 192 * 1024

/**
 * A file's bytes a slice at a time, each on a turn of the event loop of its own: MailComposer
 * encodes what it is given in one go, and megabytes of base64 lines would hold every other
 * request meanwhile.
 */
async function* slices(bytes: Buffer): AsyncGenerator<Buffer> {
  for (let at = 0; at < bytes.length; at += FILE_SLICE) {
    if (at > 0) await new Promise((resolve) => setImmediate(resolve))
    yield bytes.subarray(at, at + FILE_SLICE)
  }
}

/** A header's line(s), folded; none for a value that encodes to nothing (an empty list). */
function header(key: string, value: string | string[] | undefined): string {
  if (value === undefined) return ''
  const encoded = encodeHeaderValue(key, value)
  return encoded.trim() ? foldLines(`${key}: ${encoded}`, HEADER_LINE_LENGTH) : ''
}

function contentTypeLine(type: string, params: Record<string, string>): string {
  return foldLines(`Content-Type: ${buildHeaderValue(type, params)}`, HEADER_LINE_LENGTH)
}

function headerBlock(lines: string[]): string {
  return `${lines.filter(Boolean).join('\r\n')}\r\n\r\n`
}

/** A text part: its Content-Type and Content-Transfer-Encoding lines and its encoded body. */
function leaf(type: string, content: string) {
  // A part with text names its charset; the empty part of a message with neither has no body to
  // encode, and so no charset and no encoding.
  const typeLine = contentTypeLine(type, content ? { charset: 'utf-8' } : {})
  if (!content) return { typeLine, encodingLine: '', body: '' }
  // nodemailer's own choice: as it is when it can be, else whichever encoding is shorter.
  const encoding = transferEncodingOf(type, content)
  const body =
    encoding === 'base64'
      ? base64Body(content)
      : encoding === 'quoted-printable'
        ? quotedPrintableBody(content)
        : content
  return { typeLine, encodingLine: `Content-Transfer-Encoding: ${encoding}`, body }
}

/** The whole message, ending with a line break as every message does. */
function message(chunks: string[]): Buffer {
  const whole = chunks.join('')
  if (whole.endsWith('\n')) return Buffer.from(whole)
  return Buffer.from(whole + (whole.endsWith('\r') ? '\n' : '\r\n'))
}
