import type { AttemptKind, HistoryEvent, OutboxDetail, ReportEvent, Tag } from '../db/outbox-types.ts'
import { isCancelable } from '../sending/scheduling.ts'
import { ConfirmLink } from './confirm.tsx'
import { HtmlPreview } from './html-preview.tsx'
import { Table, When } from './layout.tsx'
import { Attachments, ExtraHeaders, SourceFact } from './outbox-fields.tsx'

/** One outbox record as the dashboard shows it: its facts, each recipient, its history and content. */

export const OUTBOX_PATH = '/dashboard/outbox'

export function StatusTag(props: { status: string }) {
  const tone =
    { sent: 'good', failed: 'bad', queued: 'warn', sending: 'warn', scheduled: 'warn' }[props.status] ?? ''
  return <mark class={`tag ${tone}`}>{props.status}</mark>
}

export function RecordPage(props: { record: OutboxDetail }) {
  const r = props.record
  return (
    <>
      <p>
        <a href={OUTBOX_PATH}>← Outbox</a>
      </p>
      <dl class="facts">
        <StatusFacts record={r} />
        <dt>Subject</dt>
        <dd class="wrap">{r.subject}</dd>
        <dt>From</dt>
        <dd class="words">{r.from}</dd>
        <dt>To</dt>
        <dd class="words">{r.to.join(', ')}</dd>
        {r.cc.length ? (
          <>
            <dt>Cc</dt>
            <dd class="words">{r.cc.join(', ')}</dd>
          </>
        ) : null}
        {r.bcc.length ? (
          <>
            <dt>Bcc</dt>
            <dd class="words">{r.bcc.join(', ')}</dd>
          </>
        ) : null}
        {r.reply_to.length ? (
          <>
            <dt>Reply-To</dt>
            <dd class="words">{r.reply_to.join(', ')}</dd>
          </>
        ) : null}
        <dt>Connection</dt>
        <dd class="words">{r.connection_from ?? <span class="muted">deleted</span>}</dd>
        <SourceFact record={r} />
        {r.batch_id !== null ? (
          <>
            <dt>Batch</dt>
            <dd class="wrap">
              <a href={`/dashboard/batches/${r.batch_id}`}>{r.batch_name ?? `Batch ${r.batch_id}`}</a>
            </dd>
          </>
        ) : null}
        {r.tags.length ? (
          <>
            <dt>Tags</dt>
            <dd>
              <TagList tags={r.tags} />
            </dd>
          </>
        ) : null}
        <dt>Attempts</dt>
        <dd>{r.attempts}</dd>
        {r.error ? (
          <>
            <dt>Error</dt>
            <dd class="words">{r.error}</dd>
          </>
        ) : null}
        <dt>Message-ID</dt>
        <dd class="wrap">
          <code>{r.message_id}</code>
        </dd>
        <TimeFacts record={r} />
      </dl>
      <Recipients record={r} />
      <History events={r.history} />
      <ExtraHeaders record={r} />
      <Attachments record={r} />
      <Content record={r} />
    </>
  )
}

/** Each tag as `name:value`, a link to the outbox's messages that carry it. */
function TagList(props: { tags: Tag[] }) {
  return (
    <ul class="tag-list">
      {props.tags.map(({ name, value }) => (
        <li class="tag-list-item">
          <a class="wrap" href={`${OUTBOX_PATH}?${new URLSearchParams({ tag: `${name}:${value}` })}`}>
            <code>
              {name}:{value}
            </code>
          </a>
        </li>
      ))}
    </ul>
  )
}

/** Its status, with Cancel while that is possible, and the time it was scheduled for. */
function StatusFacts(props: { record: OutboxDetail }) {
  const r = props.record
  return (
    <>
      <dt>Status</dt>
      <dd>
        <StatusTag status={r.status} />{' '}
        {isCancelable(r) ? <ConfirmLink href={`${OUTBOX_PATH}/${r.id}/cancel`} label="Cancel" /> : null}
      </dd>
      {r.scheduled_at ? (
        <>
          <dt>Scheduled for</dt>
          <dd>
            <When at={r.scheduled_at} />
          </dd>
        </>
      ) : null}
    </>
  )
}

/** When it was made, sent, tried next and last changed. */
function TimeFacts(props: { record: OutboxDetail }) {
  const r = props.record
  return (
    <>
      <dt>Created</dt>
      <dd>
        <When at={r.created_at} />
      </dd>
      <dt>Sent</dt>
      <dd>
        <When at={r.sent_at} empty="not sent" />
      </dd>
      {r.next_attempt_at ? (
        <>
          <dt>Next attempt</dt>
          <dd>
            <When at={r.next_attempt_at} />
          </dd>
        </>
      ) : null}
      <dt>Last change</dt>
      <dd>
        <When at={r.updated_at} />
      </dd>
    </>
  )
}

const RECIPIENT_TONES = {
  accepted: 'good',
  refused: 'bad',
  deferred: 'warn',
  suppressed: 'bad',
  bounced: 'bad',
  complained: 'bad',
} as const

/**
 * Each recipient with what the server last said for it (accepted, refused, deferred), or what a
 * report read from the connection's mailbox said since (bounced, complained).
 */
function Recipients(props: { record: OutboxDetail }) {
  const { recipients } = props.record
  return (
    <section>
      <h2>Recipients</h2>
      {recipients === null ? (
        <p class="muted">
          {(props.record.status === 'queued' || props.record.status === 'scheduled') &&
          props.record.attempts === 0
            ? 'Not tried yet.'
            : 'The server’s answer for each recipient was not recorded for this message.'}
        </p>
      ) : (
        <Table head={['Address', 'Outcome', "The server's reply"]}>
          {recipients.map((x) => (
            <tr>
              <td class="wrap words">{x.address}</td>
              <td>
                <mark class={`tag ${RECIPIENT_TONES[x.status]}`}>{x.status}</mark>
              </td>
              <td class="wrap words">{x.reply ?? <span class="muted">none</span>}</td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  )
}

/** What a deferred attempt met, as the history says it. */
const DEFERRALS: Partial<Record<AttemptKind, string>> = {
  deferred: 'deferred',
  pushback: 'the provider asked to slow down',
  unreachable: 'the server could not be reached',
}

/** An event of the history, named for a person. */
function eventName(event: HistoryEvent): string {
  switch (event.type) {
    case 'scheduled':
      return 'Scheduled'
    case 'queued':
      return 'Queued'
    case 'submitted':
      return 'Submitted (sent at once)'
    case 'sent':
      return `Attempt ${event.attempt}: sent`
    case 'deferred':
      return `Attempt ${event.attempt}: ${DEFERRALS[event.outcome] ?? 'deferred'}`
    case 'refused':
      return `Attempt ${event.attempt}: refused`
    case 'failed':
      return 'Failed'
    case 'retried':
      return event.by === 'operator' ? 'Retried by the operator' : 'Retried from the batch page'
    case 'canceled':
      return 'Canceled'
    case 'bounced':
      return `Bounced: ${event.recipient}${event.status ? ` (${event.status})` : ''}`
    case 'complained':
      return `Complaint: ${event.recipient}`
  }
}

/** The server's reply to an attempt, why the message failed, or what a report said. */
function eventDetail(event: HistoryEvent): string | null {
  if ('reply' in event) return event.reply
  if ('reason' in event) return event.reason
  if (event.type === 'bounced' || event.type === 'complained') return reportDetail(event)
  return null
}

/** A report's diagnostic (a complaint's feedback type), and whether the address is now suppressed. */
function reportDetail(event: ReportEvent): string {
  const said =
    event.type === 'complained' ? `feedback type: ${event.diagnostic ?? 'not given'}` : event.diagnostic
  const suppressed = event.suppressed ? 'address suppressed' : 'not suppressed (not a hard bounce)'
  return said ? `${said}; ${suppressed}` : suppressed
}

/** Everything that happened to the message, oldest first. */
function History(props: { events: HistoryEvent[] }) {
  return (
    <section>
      <h2>History</h2>
      <Table head={['Event', 'When', 'Reply or reason']}>
        {props.events.map((event) => {
          const detail = eventDetail(event)
          return (
            <tr data-event={event.type}>
              <td>{eventName(event)}</td>
              <td class="nowrap">
                <When at={event.at} />
              </td>
              <td class="wrap words">{detail ?? <span class="muted">none</span>}</td>
            </tr>
          )
        })}
      </Table>
    </section>
  )
}

/** The message's text and HTML; the HTML in a sandboxed frame, where none of its scripts run. */
function Content(props: { record: OutboxDetail }) {
  const { text_body: text, html_body: html } = props.record
  if (text === null && html === null) {
    return (
      <section>
        <h2>Content</h2>
        <p class="muted">
          {props.record.source === 'smtp'
            ? 'Submitted over SMTP: it is sent as the app wrote it, and its content is not shown.'
            : 'The content of this message was not kept.'}
        </p>
      </section>
    )
  }
  return (
    <>
      <section>
        <h2>Text</h2>
        {text === null ? <p class="muted">No text part.</p> : <pre class="body-text">{text}</pre>}
      </section>
      <section>
        <h2>HTML</h2>
        {html === null ? <p class="muted">No HTML part.</p> : <HtmlPreview html={html} />}
      </section>
    </>
  )
}
