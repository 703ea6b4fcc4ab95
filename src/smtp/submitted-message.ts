import { Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { Headers } from '@zone-eu/mailsplit'
import { Joiner, Splitter } from '@zone-eu/mailsplit'
import libmime from 'libmime'
import { addressesIn } from './nodemailer-internals.ts'

/**
 * A message as an app submitted it over SMTP, made ready to go on: its header block is read and
 * changed by mailsplit, and everything else (the other headers, the body, every MIME part) goes
 * on byte for byte.
 */

/** The header an app names the email's tags in: `name=value, name=value`. */
export const TAGS_HEADER = 'X-Mailroom-Tags'

export interface PreparedMessage {
  /** The bytes to send: as submitted, without Bcc and the tags header, with Message-ID and Date. */
  raw: Buffer
  /** Its Message-ID, the app's own or the one added. */
  messageId: string
  /** Its subject, encoded words decoded; '' for none. */
  subject: string
  /** The addresses its To and Cc headers name, groups flattened. */
  to: string[]
  cc: string[]
  /** The tags header's value, unfolded, when the app gave one (each line, if given more than once). */
  tags: string[]
}

/**
 * Removes Bcc (its recipients are in the envelope alone) and the tags header; adds `messageId`
 * and `date` when the message has no Message-ID or Date of its own, after the app's headers.
 */
export async function preparedMessage(
  message: Buffer,
  added: { messageId: string; date: Date },
): Promise<PreparedMessage> {
  let read: Omit<PreparedMessage, 'raw'> | undefined
  const rootHeaders = new Transform({
    objectMode: true,
    transform(chunk: { type: string; root?: boolean; headers?: Headers | false }, _encoding, done) {
      if (chunk.type === 'node' && chunk.root && chunk.headers) read = changedHeaders(chunk.headers, added)
      done(null, chunk)
    },
  })
  const parts: Buffer[] = []
  const joiner = new Joiner()
  joiner.on('data', (part: Buffer) => parts.push(part))
  await pipeline(
    async function* () {
      yield message
    },
    new Splitter(),
    rootHeaders,
    joiner,
  )
  if (!read) throw new Error('the message splitter gave no header block')
  return { raw: Buffer.concat(parts), ...read }
}

function changedHeaders(headers: Headers, added: { messageId: string; date: Date }) {
  const tags = values(headers, TAGS_HEADER)
  headers.remove('bcc')
  headers.remove(TAGS_HEADER)
  const own = values(headers, 'message-id')[0]?.trim()
  const messageId = own ? own : added.messageId
  const end = headers.getList().length
  if (!own) headers.add('Message-ID', messageId, end)
  if (values(headers, 'date').length === 0) headers.add('Date', rfc5322Date(added.date), end + 1)
  return {
    messageId,
    subject: libmime.decodeWords(values(headers, 'subject')[0] ?? '').trim(),
    to: addresses(values(headers, 'to')),
    cc: addresses(values(headers, 'cc')),
    tags,
  }
}

/** Each of the header's values, unfolded, as the message spells them (UTF-8 read as such). */
function values(headers: Headers, key: string): string[] {
  return headers.getDecoded(key).map((line) => String(line.value))
}

function addresses(lines: string[]): string[] {
  return lines.flatMap((line) => addressesIn(libmime.decodeWords(line)))
}

/** A date as a Date header writes it (RFC 5322), in UTC. */
function rfc5322Date(date: Date): string {
  return date.toUTCString().replace(/GMT$/, '+0000')
}
