import { createHash } from 'node:crypto'
import type { ValidationIssue } from '../app-error.ts'
import { contentTypeOf } from '../smtp/nodemailer-internals.ts'
import { addressesOf } from './address-list.ts'

/**
 * What an email carries besides its recipients and bodies: where replies go, extra header
 * fields and attached files, each rule of the contract checked (openapi/openapi.yaml, ReplyTo,
 * ExtraHeaders, Attachments).
 */

export const MAX_REPLY_TO = 10
export const MAX_HEADERS = 50
export const MAX_HEADER_NAME = 76
/** Base64 characters decoded on one turn of the event loop (a multiple of 4: 768 KiB of bytes). */
const BASE64_SLICE = 1024 * 1024
/** Decoded, an email's attachments total at most this. */
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024

export interface AttachmentBody {
  filename: string
  content: string
  content_type?: string | undefined
  content_id?: string | undefined
}

/** The three fields as the generated validator lets them through. */
export interface ExtrasBody {
  reply_to?: string | string[] | undefined
  headers?: Record<string, string> | undefined
  attachments?: AttachmentBody[] | undefined
}

/** An attachment decoded, its media type settled. */
export interface AttachedFile {
  filename: string
  contentType: string
  /** Set: an inline part, shown by the HTML body as `cid:<contentId>`. */
  contentId?: string
  content: Buffer
  /** Of `content`, in hex. */
  sha256: string
}

export interface MessageExtras {
  replyTo: string[]
  headers: Record<string, string>
  attachments: AttachedFile[]
}

/** What is kept of an attachment once its content is not: enough to tell which file went. */
export interface AttachmentSummary {
  filename: string
  content_type: string
  size: number
  sha256: string
  content_id?: string
}

export interface ExtrasRules {
  /** A batch to an audience: Mailroom sets the List-Unsubscribe headers itself. */
  audience?: boolean
}

/** RFC 5322 field-name: printable ASCII but the colon. */
const FIELD_NAME = /^[\x21-\x39\x3b-\x7e]+$/
const OWNED_HEADERS = new Set([
  'from',
  'sender',
  'to',
  'cc',
  'bcc',
  'reply-to',
  'subject',
  'date',
  'message-id',
  'mime-version',
  'return-path',
  'received',
  'dkim-signature',
])
const AUDIENCE_HEADERS = new Set(['list-unsubscribe', 'list-unsubscribe-post'])

/** The three fields checked, each bad value an issue at its path in `issues`. */
export async function messageExtras(
  body: ExtrasBody,
  issues: ValidationIssue[],
  rules: ExtrasRules = {},
): Promise<MessageExtras> {
  return {
    replyTo: replyToOf(body.reply_to, issues),
    headers: headersOf(body.headers ?? {}, issues, rules),
    attachments: await attachmentsOf(body.attachments ?? [], issues),
  }
}

/** Counted before any address is checked, so a long list costs no validation. */
function replyToOf(value: string | string[] | undefined, issues: ValidationIssue[]): string[] {
  if (value === undefined) return []
  const count = typeof value === 'string' ? value.split(',', MAX_REPLY_TO + 1).length : value.length
  if (count > MAX_REPLY_TO) {
    const message = `reply_to takes at most ${MAX_REPLY_TO} addresses`
    issues.push({ path: ['reply_to'], message, code: 'too_big' })
    return []
  }
  return addressesOf('reply_to', value, issues)
}

function headersOf(
  headers: Record<string, string>,
  issues: ValidationIssue[],
  rules: ExtrasRules,
): Record<string, string> {
  const entries = Object.entries(headers)
  if (entries.length > MAX_HEADERS) {
    const message = `headers takes at most ${MAX_HEADERS} fields; this one has ${entries.length}`
    issues.push({ path: ['headers'], message, code: 'too_big' })
    return {}
  }
  const seen = new Set<string>()
  for (const [name, value] of entries) {
    const problem = headerProblem(name, value, rules, seen)
    if (problem) issues.push({ path: ['headers', name], ...problem })
    seen.add(name.toLowerCase())
  }
  return Object.fromEntries(entries)
}

function headerProblem(
  name: string,
  value: string,
  rules: ExtrasRules,
  seen: Set<string>,
): Omit<ValidationIssue, 'path'> | undefined {
  const lower = name.toLowerCase()
  if (name.length > MAX_HEADER_NAME || !FIELD_NAME.test(name)) {
    const message = `A header name is 1 to ${MAX_HEADER_NAME} printable ASCII characters other than the colon`
    return { message, code: 'invalid_format' }
  }
  if (OWNED_HEADERS.has(lower) || lower.startsWith('content-')) {
    const instead = lower === 'reply-to' ? ' (use reply_to)' : ''
    return { message: `${name} is a header Mailroom sets itself${instead}`, code: 'custom' }
  }
  if (rules.audience && AUDIENCE_HEADERS.has(lower)) {
    return { message: `${name} is set by Mailroom on a batch to an audience`, code: 'custom' }
  }
  if (seen.has(lower)) return { message: `${name} is given twice (in another letter case)`, code: 'custom' }
  if (/[\r\n\0]/.test(value)) {
    return { message: 'A header value may not hold CR, LF or NUL', code: 'invalid_format' }
  }
  return undefined
}

async function attachmentsOf(list: AttachmentBody[], issues: ValidationIssue[]): Promise<AttachedFile[]> {
  // Sized from the text before anything is decoded: an email over the bound decodes nothing.
  const total = list.reduce((sum, attachment) => sum + decodedSize(attachment.content), 0)
  if (total > MAX_ATTACHMENT_BYTES) {
    const message = `Decoded, the attachments total ${total} bytes; an email takes at most ${MAX_ATTACHMENT_BYTES}`
    issues.push({ path: ['attachments'], message, code: 'too_big' })
    return []
  }
  const ids = new Set<string>()
  const files: AttachedFile[] = []
  for (const [index, attachment] of list.entries()) {
    const decoded = await strictBase64(attachment.content)
    if (decoded === undefined) {
      const message = 'Not base64 (standard alphabet, padded, with no line breaks or spaces)'
      issues.push({ path: ['attachments', index, 'content'], message, code: 'invalid_format' })
      continue
    }
    const { filename, content_id: contentId } = attachment
    if (contentId !== undefined && ids.has(contentId)) {
      const message = `Another attachment has the content_id ${contentId}`
      issues.push({ path: ['attachments', index, 'content_id'], message, code: 'custom' })
    }
    if (contentId !== undefined) ids.add(contentId)
    const contentType = attachment.content_type ?? contentTypeOf(filename)
    files.push({ filename, contentType, ...(contentId === undefined ? {} : { contentId }), ...decoded })
  }
  return files
}

function decodedSize(text: string): number {
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0
  return Math.max(0, Math.floor(text.length / 4) * 3 - padding)
}

/**
 * The bytes of canonical base64 text and their SHA-256, or undefined for any other text: Node's
 * decoder skips what it does not know, so the bytes must encode back to the very text. A long
 * text is taken a slice at a time, each on a turn of the event loop of its own, so that a
 * file of megabytes holds no other request for more than a slice's work.
 */
async function strictBase64(text: string): Promise<{ content: Buffer; sha256: string } | undefined> {
  if (text.length % 4 !== 0) return undefined
  const hash = createHash('sha256')
  const parts: Buffer[] = []
  for (let at = 0; at < text.length; at += BASE64_SLICE) {
    if (at > 0) await new Promise((resolve) => setImmediate(resolve))
    const slice = text.slice(at, at + BASE64_SLICE)
    // Padding ends the text: a slice before the last may not end with it.
    const last = at + BASE64_SLICE >= text.length
    const bytes = Buffer.from(slice, 'base64')
    if ((!last && slice.endsWith('=')) || bytes.toString('base64') !== slice) return undefined
    hash.update(bytes)
    parts.push(bytes)
  }
  return { content: Buffer.concat(parts), sha256: hash.digest('hex') }
}

/** Each attachment's name, type, size and SHA-256: what an outbox record keeps of it. */
export function attachmentSummaries(files: AttachedFile[]): AttachmentSummary[] {
  return files.map((file) => ({
    filename: file.filename,
    content_type: file.contentType,
    size: file.content.length,
    sha256: file.sha256,
    ...(file.contentId === undefined ? {} : { content_id: file.contentId }),
  }))
}

/** The extras as an outgoing message carries them (deliver.ts); nothing for none. */
export function outgoingExtras(extras: MessageExtras | undefined) {
  if (extras === undefined) return {}
  return {
    ...(extras.replyTo.length === 0 ? {} : { replyTo: extras.replyTo }),
    ...(Object.keys(extras.headers).length === 0 ? {} : { extraHeaders: extras.headers }),
    ...(extras.attachments.length === 0 ? {} : { attachments: extras.attachments }),
  }
}

/** The extras as queued mail keeps them: reply-to addresses comma-separated, files summed up beside their bytes. */
export function queuedFields(extras: MessageExtras | undefined) {
  if (extras === undefined) return {}
  const { replyTo, headers, attachments } = extras
  return {
    ...(replyTo.length === 0 ? {} : { replyTo: replyTo.join(', ') }),
    ...(Object.keys(headers).length === 0 ? {} : { headers }),
    ...(attachments.length === 0
      ? {}
      : {
          attachments: attachmentSummaries(attachments),
          attachmentContents: attachments.map((file) => file.content),
        }),
  }
}

/** What a queued record kept, as an outgoing message carries it again (reply_to is read apart). */
export function storedExtras(record: {
  headers: Record<string, string> | null
  attachments: AttachmentSummary[] | null
  attachment_contents: Buffer[]
}) {
  const { headers, attachments, attachment_contents: contents } = record
  return {
    ...(headers === null ? {} : { extraHeaders: headers }),
    ...(attachments === null
      ? {}
      : {
          attachments: attachments.map((summary, i) => {
            const content = contents[i]
            // Bytes go only when the email ends, and an ended email is never sent again.
            if (content === undefined) throw new Error('a queued attachment has no content')
            const file = { filename: summary.filename, contentType: summary.content_type, content }
            return summary.content_id === undefined ? file : { ...file, contentId: summary.content_id }
          }),
        }),
  }
}

/** What an email sent at once keeps of the extras on its record: the files summed up, never their bytes. */
export function sentFields(extras: MessageExtras) {
  const { attachmentContents, ...kept } = queuedFields(extras)
  return kept
}
