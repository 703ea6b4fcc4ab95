import type { StoredRecord } from '../db/outbox-types.ts'
import { compileContent } from '../templates/placeholders.ts'

/**
 * A record as its reader shows it. A batch recipient's record keeps only its recipient and
 * payload; its subject and bodies are rendered from the batch's content, stored once, with the
 * same code and the same inputs as when it was sent, so they read exactly as what was sent.
 */
export function rendered<T extends { subject: string; text_body?: string | null; html_body?: string | null }>(
  record: StoredRecord<T>,
): T {
  const { content, payload, ...own } = record
  // A record without batch content has its own subject (a constraint of the table says so).
  if (content === null) return own as unknown as T
  const message = compileContent(content)(payload)
  const shown: Record<string, unknown> = { ...own, subject: message.subject }
  // Only the fields the reader asked for: a list reads the subject alone.
  if ('text_body' in own) shown.text_body = message.text_body ?? null
  if ('html_body' in own) shown.html_body = message.html_body ?? null
  return shown as T
}
