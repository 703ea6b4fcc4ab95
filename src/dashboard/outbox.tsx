import { listConnections } from '../connections/connections.ts'
import { isStorableId } from '../db/ids.ts'
import { invalidInput, type ValidationIssue } from '../errors.ts'
import {
  type AttemptKind,
  browseOutbox,
  type HistoryEvent,
  isCalendarDay,
  type OutboxDetail,
  type OutboxFilter,
  type OutboxListRow,
  type OutboxPage,
  outboxRecord,
} from '../sending/outbox-views.ts'
import type { Dashboard, DashboardContext } from './env.ts'
import { refusalOf } from './errors.tsx'
import { Pager, page, type Refusal, Table, When } from './layout.tsx'
import { idParam } from './params.ts'

const LIST = '/dashboard/outbox'
/** The newest page refreshes itself this often (seconds). */
const LIVE_EVERY = 5
const STATUSES = ['queued', 'sending', 'sent', 'failed'] as const
const MAX_SEARCH = 200

/** The outbox: newest first, paged, filtered and searched; a page per record. */
export function registerOutbox(app: Dashboard): void {
  app.get(LIST, async (c) => {
    const query = readQuery(c)
    const sql = c.get('services').sql
    const { accountId } = c.get('session')
    const [connections, found] = await Promise.all([
      listConnections(sql, accountId),
      query.refusal ? undefined : browseOutbox(sql, accountId, query.filter, query.before),
    ])
    return page(
      c,
      {
        title: 'Outbox',
        section: '/dashboard/outbox',
        refusal: query.refusal,
        status: query.refusal ? 400 : 200,
      },
      <>
        <FilterForm filter={query.filter} connections={connections.map((x) => [x.id, x.from])} />
        {found ? <Records query={query} found={found} /> : null}
      </>,
    )
  })

  // The newest page's rows, for the script that keeps them current.
  app.get(`${LIST}/live`, async (c) => {
    const query = readQuery(c)
    if (query.refusal) return c.body(null, 400)
    const found = await browseOutbox(c.get('services').sql, c.get('session').accountId, query.filter)
    return c.html(<Records query={query} found={found} />)
  })

  app.get(`${LIST}/:id{[0-9]+}`, async (c) => {
    const record = await outboxRecord(c.get('services').sql, c.get('session').accountId, idParam(c))
    return page(
      c,
      { title: `Message ${record.id}`, section: '/dashboard/outbox' },
      <RecordPage record={record} />,
    )
  })
}

interface Query {
  filter: OutboxFilter
  before: number | undefined
  /** The query string of the filter alone, for the pages' links. */
  search: URLSearchParams
  refusal?: Refusal
}

/** The filter in the address: what does not make sense is refused by name, not ignored. */
function readQuery(c: DashboardContext): Query {
  const q = (name: string) => c.req.query(name)?.trim() || undefined
  const issues: ValidationIssue[] = []
  const id = (name: string, label: string) => {
    const raw = q(name)
    if (raw === undefined) return undefined
    const value = /^[0-9]{1,10}$/.test(raw) ? Number(raw) : Number.NaN
    if (isStorableId(value)) return value
    issues.push({ path: [label], message: 'must be a number', code: 'invalid_type' })
    return undefined
  }
  const day = (name: string, label: string) => {
    const raw = q(name)
    if (raw === undefined) return undefined
    if (isCalendarDay(raw)) return raw
    issues.push({ path: [label], message: 'must be a date (YYYY-MM-DD)', code: 'invalid_format' })
    return undefined
  }
  const status = q('status')
  if (status !== undefined && !STATUSES.some((s) => s === status)) {
    issues.push({ path: ['status'], message: `must be one of ${STATUSES.join(', ')}`, code: 'invalid_value' })
  }
  const searchText = q('q')
  if (searchText !== undefined && (searchText.length > MAX_SEARCH || searchText.includes('\u0000'))) {
    issues.push({
      path: ['search'],
      message: `at most ${MAX_SEARCH} characters, no NUL`,
      code: 'invalid_format',
    })
  }
  const filter: OutboxFilter = {
    status: STATUSES.find((s) => s === status),
    connectionId: id('connection', 'connection'),
    batchId: id('batch', 'batch'),
    from: day('from', 'from'),
    to: day('to', 'to'),
    search: searchText,
  }
  // Calendar days as YYYY-MM-DD compare as text.
  if (filter.from !== undefined && filter.to !== undefined && filter.from > filter.to) {
    issues.push({ path: ['to'], message: `must not be before from (${filter.from})`, code: 'too_small' })
  }
  const before = id('before', 'page')
  const search = new URLSearchParams()
  for (const name of ['status', 'connection', 'batch', 'from', 'to', 'q']) {
    const value = q(name)
    if (value !== undefined) search.set(name, value)
  }
  return {
    filter,
    before,
    search,
    ...(issues.length ? { refusal: refusalOf(invalidInput(issues)) } : {}),
  }
}

function FilterForm(props: { filter: OutboxFilter; connections: [number, string][] }) {
  const f = props.filter
  return (
    <form method="get" action={LIST} class="filters">
      <div class="grid">
        <input
          type="search"
          name="q"
          value={f.search}
          placeholder="Recipient or subject"
          aria-label="Search"
        />
        <select name="status" aria-label="Status">
          <option value="">Any status</option>
          {STATUSES.map((s) => (
            <option value={s} selected={f.status === s}>
              {s}
            </option>
          ))}
        </select>
        <select name="connection" aria-label="Connection">
          <option value="">Any connection</option>
          {props.connections.map(([id, from]) => (
            <option value={String(id)} selected={f.connectionId === id}>
              {from}
            </option>
          ))}
        </select>
      </div>
      <div class="grid">
        <label>
          Batch
          <input name="batch" inputmode="numeric" pattern="[0-9]*" value={f.batchId?.toString()} />
        </label>
        <label>
          From
          <input type="date" name="from" value={f.from} />
        </label>
        <label>
          To
          <input type="date" name="to" value={f.to} />
        </label>
      </div>
      <div class="actions">
        <button type="submit">Filter</button>
        <a href={LIST} class="button-link secondary outline">
          Clear
        </a>
      </div>
    </form>
  )
}

function withQuery(search: URLSearchParams, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams(search)
  for (const [name, value] of Object.entries(extra)) params.set(name, value)
  const text = params.toString()
  return text ? `${LIST}?${text}` : LIST
}

/** The list and its pager; the newest page keeps itself current (see assets/dashboard.js). */
function Records(props: { query: Query; found: OutboxPage }) {
  const { query, found } = props
  const live = query.before === undefined
  const liveSearch = query.search.toString()
  return (
    <div
      class="records"
      data-live={live ? `${LIST}/live${liveSearch ? `?${liveSearch}` : ''}` : undefined}
      data-live-every={live ? String(LIVE_EVERY) : undefined}
    >
      {found.records.length === 0 ? (
        <p>{query.search.size ? 'No message matches.' : 'Nothing sent yet.'}</p>
      ) : (
        <Table head={['Subject', 'To', 'Status', 'Created']}>
          {found.records.map((record) => (
            <Row record={record} />
          ))}
        </Table>
      )}
      <Pager
        newer={query.before !== undefined ? withQuery(query.search) : undefined}
        older={
          found.older !== undefined ? withQuery(query.search, { before: String(found.older) }) : undefined
        }
      />
    </div>
  )
}

export function StatusTag(props: { status: string }) {
  const tone = { sent: 'good', failed: 'bad', queued: 'warn', sending: 'warn' }[props.status] ?? ''
  return <mark class={`tag ${tone}`}>{props.status}</mark>
}

function Row(props: { record: OutboxListRow }) {
  const r = props.record
  const more = r.to.length > 1 ? ` +${r.to.length - 1}` : ''
  return (
    <tr>
      <td class="wrap">
        <a href={`${LIST}/${r.id}`}>{r.subject}</a>
        {r.error ? <small class="error-line words">{r.error}</small> : null}
      </td>
      <td class="wrap words">
        {r.to[0]}
        {more}
      </td>
      <td>
        <StatusTag status={r.status} />
      </td>
      <td class="nowrap">
        <When at={r.created_at} />
      </td>
    </tr>
  )
}

function RecordPage(props: { record: OutboxDetail }) {
  const r = props.record
  return (
    <>
      <p>
        <a href={LIST}>← Outbox</a>
      </p>
      <dl class="facts">
        <dt>Status</dt>
        <dd>
          <StatusTag status={r.status} />
        </dd>
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
        <dt>Connection</dt>
        <dd class="words">{r.connection_from ?? <span class="muted">deleted</span>}</dd>
        {r.batch_id !== null ? (
          <>
            <dt>Batch</dt>
            <dd class="wrap">
              <a href={`/dashboard/batches/${r.batch_id}`}>{r.batch_name ?? `Batch ${r.batch_id}`}</a>
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
      </dl>
      <Recipients record={r} />
      <History events={r.history} />
      <Content record={r} />
    </>
  )
}

const RECIPIENT_TONES = { accepted: 'good', refused: 'bad', deferred: 'warn' } as const

/** Each recipient with what the server last said for it (accepted, refused, deferred). */
function Recipients(props: { record: OutboxDetail }) {
  const { recipients } = props.record
  return (
    <section>
      <h2>Recipients</h2>
      {recipients === null ? (
        <p class="muted">
          {props.record.status === 'queued' && props.record.attempts === 0
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
  }
}

/** The server's reply to an attempt, or why the message failed. */
function eventDetail(event: HistoryEvent): string | null {
  if ('reply' in event) return event.reply
  if ('reason' in event) return event.reason
  return null
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
        <p class="muted">The content of this message was not kept.</p>
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

/**
 * Heads the frame's document: its own policy, read before any of the email's markup, so that
 * nothing remote loads even before the inherited one applies (a tracking pixel would tell the
 * sender the message was looked at).
 */
const PREVIEW_POLICY =
  '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; img-src data:; style-src \'unsafe-inline\'">'

/**
 * An email's HTML, shown in a frame with every sandbox restriction (no scripts, no forms, an
 * origin of its own), where nothing remote loads: never as the dashboard's own page.
 */
export function HtmlPreview(props: { html: string }) {
  return (
    <>
      <iframe
        class="html-preview"
        sandbox=""
        srcdoc={PREVIEW_POLICY + props.html}
        title="The message's HTML"
        referrerpolicy="no-referrer"
      />
      <details>
        <summary>HTML source</summary>
        <pre class="body-text">{props.html}</pre>
      </details>
    </>
  )
}
