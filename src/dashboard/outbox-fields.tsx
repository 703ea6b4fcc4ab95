import type { EmailSource, OutboxDetail, StoredAttachment } from '../db/outbox-types.ts'

/**
 * What a message carried besides its recipients and bodies, on its page: its extra header
 * fields and its files. Names and values are the caller's, any length: each breaks anywhere
 * rather than widen the page.
 */

const SOURCES: Record<EmailSource, string> = {
  api: 'API',
  batch: 'Batch',
  form: 'Hosted form',
  smtp: 'SMTP relay (sent as the app wrote it)',
}

/** Where the email came from, as its facts say it. */
export function SourceFact(props: { record: OutboxDetail }) {
  return (
    <>
      <dt>Source</dt>
      <dd>{SOURCES[props.record.source]}</dd>
    </>
  )
}

/** The extra header fields, one a line as the message carries them. */
export function ExtraHeaders(props: { record: OutboxDetail }) {
  const fields = Object.entries(props.record.headers)
  if (fields.length === 0) return null
  return (
    <section>
      <h2>Extra headers</h2>
      <ul>
        {fields.map(([name, value]) => (
          <li class="wrap">
            <code>{name}:</code> {value}
          </li>
        ))}
      </ul>
    </section>
  )
}

/** Each file's name, type and size; an inline one with the Content-ID its HTML shows it by. */
export function Attachments(props: { record: OutboxDetail }) {
  const files = props.record.attachments
  if (files.length === 0) return null
  return (
    <section>
      <h2>Attachments</h2>
      <ul>
        {files.map((file) => (
          <li class="wrap">
            <strong>{file.filename}</strong>
            <br />
            <small class="muted">
              {file.content_type}, {sizeOf(file)}
              {file.content_id === undefined ? null : <>, inline as cid:{file.content_id}</>}
            </small>
          </li>
        ))}
      </ul>
    </section>
  )
}

const UNITS = ['KiB', 'MiB'] as const

/** A file's size for a person: bytes below 1 KiB, else one decimal of the largest unit that fits. */
function sizeOf(file: StoredAttachment): string {
  if (file.size < 1024) return `${file.size} ${file.size === 1 ? 'byte' : 'bytes'}`
  const power = file.size < 1024 * 1024 ? 1 : 2
  return `${(file.size / 1024 ** power).toFixed(1)} ${UNITS[power - 1]}`
}
