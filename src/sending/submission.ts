import { requireFeature } from '../accounts/features.ts'
import { AppError, type ValidationIssue, zodIssues } from '../app-error.ts'
import { selectConnection } from '../connections/selection.ts'
import type { SendingConnection } from '../db/connections.ts'
import type { Tag } from '../db/outbox-types.ts'
import { enqueueMessages } from '../db/queue-entry.ts'
import { storeRawMessage } from '../db/raw-messages.ts'
import type { Sql } from '../db/sql.ts'
import { TagsSchema } from '../generated/routes.ts'
import type { Caller } from '../keys/caller.ts'
import { preparedMessage, TAGS_HEADER } from '../smtp/submitted-message.ts'
import { newMessageId } from './attempts.ts'
import { uniqueAddresses } from './recipients.ts'
import { checkedTags } from './tags.ts'

/**
 * Mail submitted over SMTP: the relay's door (src/relay/) calls these two, in this order, and
 * answers by their outcome. Both take `{ sql }` (Services will do) as their first parameter,
 * and raise the error catalog's AppErrors, the same codes /enqueue raises:
 * FEATURE_NOT_AVAILABLE (a Free account), CONNECTION_SCOPE_MISMATCH, CONNECTION_NOT_FOUND
 * (no such connection, or a disabled one); the door maps them to SMTP replies.
 */
export interface SubmissionServices {
  sql: Sql
}

/**
 * MAIL FROM: the connection `from` names for this caller, chosen as /enqueue chooses it (Pro
 * only, since the relay queues; a key's scope wins; a disabled connection is refused; a paused
 * one is accepted, the mail waiting for it).
 */
export async function relayConnection(
  { sql }: SubmissionServices,
  caller: Caller,
  from: string,
): Promise<SendingConnection> {
  requireFeature(caller, 'asyncSending')
  return selectConnection(sql, caller, from, 'queued')
}

/** What the door received once DATA is done. */
export interface Submitted {
  caller: Caller
  connection: SendingConnection
  /** The envelope's MAIL FROM, as the client gave it. */
  mailFrom: string
  /** The envelope's RCPT TO addresses. */
  recipients: string[]
  /** The message exactly as the client sent it (dot-unstuffed, CRLF line ends). */
  message: Buffer
  /** The client asked for SMTPUTF8 in MAIL FROM. */
  smtpUtf8: boolean
  requestId: string
}

/** What acceptSubmission answers: the email's outbox ID and its Message-ID. */
export interface AcceptedSubmission {
  outboxId: number
  messageId: string
}

/**
 * DATA done: stores the message durably (its outbox record, queued with source `smtp`, its bytes
 * and the job that sends it, in one transaction) and returns after the commit, so the door
 * answers 250 only for mail that survives a crash. From there it is queued mail like /enqueue's,
 * but for its content: the bytes as submitted (see preparedMessage), to the envelope's
 * recipients. A bad X-Mailroom-Tags header raises VALIDATION_ERROR naming it; a Free caller
 * FEATURE_NOT_AVAILABLE.
 */
export async function acceptSubmission(
  { sql }: SubmissionServices,
  submitted: Submitted,
): Promise<AcceptedSubmission> {
  const { caller, connection } = submitted
  requireFeature(caller, 'asyncSending')
  const prepared = await preparedMessage(submitted.message, {
    messageId: newMessageId(connection.from_address),
    date: new Date(),
  })
  const tags = tagsOfHeader(prepared.tags)
  const queued = {
    accountId: caller.accountId,
    from: connection.from_address,
    ...recipientsByHeader(uniqueAddresses(submitted.recipients), prepared),
    subject: storable(prepared.subject),
    messageId: storable(prepared.messageId),
    tags,
    requestId: submitted.requestId,
    source: 'smtp' as const,
    raw: { size: prepared.raw.length, smtpUtf8: needsSmtpUtf8(submitted) },
  }
  const outboxId = await sql.begin(async (tx) => {
    const [stored] = await enqueueMessages(tx, connection.id, [queued])
    if (!stored) throw new Error('a submitted message was not queued')
    await storeRawMessage(tx, stored.id, prepared.raw)
    return stored.id
  })
  return { outboxId, messageId: queued.messageId }
}

/**
 * The envelope's recipients as the record names them: those the To header names in `to`, those
 * the Cc header names in `cc`, and the others (Bcc's, or any the headers do not name) in `bcc`.
 * The record's recipients are always the envelope's: a header names no one the message goes to
 * unless the envelope does.
 */
function recipientsByHeader(envelope: string[], headers: { to: string[]; cc: string[] }) {
  const named = (list: string[]) => new Set(list.map((address) => address.toLowerCase()))
  const to = named(headers.to)
  const cc = named(headers.cc)
  return {
    to: envelope.filter((address) => to.has(address.toLowerCase())),
    cc: envelope.filter((address) => !to.has(address.toLowerCase()) && cc.has(address.toLowerCase())),
    bcc: envelope.filter((address) => !to.has(address.toLowerCase()) && !cc.has(address.toLowerCase())),
  }
}

/** The client asked for SMTPUTF8, or an envelope address is not ASCII. */
function needsSmtpUtf8({ smtpUtf8, mailFrom, recipients }: Submitted): boolean {
  return smtpUtf8 || [mailFrom, ...recipients].some((address) => /[^ -~]/.test(address))
}

/** PostgreSQL text holds no U+0000; a header could carry one. */
function storable(text: string): string {
  return text.replaceAll('\u0000', '')
}

/**
 * The tags the X-Mailroom-Tags header names (`name=value, name=value`; several such headers are
 * read as one list), under the API's rules for tags; a header that breaks one is refused, named.
 */
export function tagsOfHeader(lines: string[]): Tag[] {
  const items = lines.flatMap((line) => line.split(',')).map((item) => item.trim())
  if (items.every((item) => item === '')) return []
  const pairs = items.map((item) => {
    const at = item.indexOf('=')
    return at < 0
      ? { name: item, value: '' }
      : { name: item.slice(0, at).trim(), value: item.slice(at + 1).trim() }
  })
  const parsed = TagsSchema.safeParse(pairs)
  const issues: ValidationIssue[] = parsed.success ? [] : zodIssues(parsed.error)
  const tags = parsed.success ? checkedTags(parsed.data, issues) : []
  if (issues.length > 0) {
    const rule = issues.map((issue) => issue.message).join('; ')
    throw new AppError(
      'VALIDATION_ERROR',
      `The ${TAGS_HEADER} header is not a list of tags, name=value, separated by commas: ${rule}`,
      { issues: issues.map((issue) => ({ ...issue, path: [TAGS_HEADER, ...issue.path] })) },
    )
  }
  return tags
}
