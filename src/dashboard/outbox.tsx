import { invalidInput, type ValidationIssue } from '../app-error.ts'
import { listConnections } from '../connections/connections.ts'
import type { OutboxFilter, OutboxRecord, Tag } from '../db/outbox-types.ts'
import { isCalendarDay, listOutbox, type OutboxPage, outboxRecord } from '../sending/outbox-views.ts'
import { MAX_TAGS, tagOfFilter } from '../sending/tags.ts'
import type { Dashboard, DashboardContext } from './env.ts'
import { Pager, page, type Refusal, Table, When } from './layout.tsx'
import { registerOutboxCancel } from './outbox-cancel.tsx'
import { OUTBOX_PATH as LIST, RecordPage, StatusTag } from './outbox-record.tsx'
import { storableId } from './params.ts'
import { refusalOf } from './refusals.tsx'
import { resource, routes, signedIn } from './resource.ts'

/** The newest page refreshes itself this often (seconds). */
const LIVE_EVERY = 5
const STATUSES = ['scheduled', 'queued', 'sending', 'sent', 'failed', 'canceled'] as const
const MAX_SEARCH = 200

const OUTBOX = resource(LIST, (c, id) => {
  const { sql, accountId } = signedIn(c)
  return outboxRecord(sql, accountId, id)
})

/** The outbox: newest first, paged, filtered and searched; a page per record. */
export function registerOutbox(app: Dashboard): void {
  const on = routes(app, OUTBOX)
  on.list(listPage)
  // The newest page's rows, for the script that keeps them current.
  app.get(`${LIST}/live`, async (c) => {
    const query = readQuery(c)
    if (query.refusal) return c.body(null, 400)
    const { sql, accountId } = signedIn(c)
    const found = await listOutbox(sql, accountId, query.filter)
    return c.html(<Records query={query} found={found} />)
  })
  on.detail((c, record) =>
    page(c, { title: `Message ${record.id}`, section: '/dashboard/outbox' }, <RecordPage record={record} />),
  )
  registerOutboxCancel(on)
}

async function listPage(c: DashboardContext) {
  const query = readQuery(c)
  const { sql, accountId } = signedIn(c)
  const [connections, found] = await Promise.all([
    listConnections(sql, accountId),
    query.refusal ? undefined : listOutbox(sql, accountId, query.filter, { before: query.before }),
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
      <FilterForm
        filter={query.filter}
        tag={query.search.get('tag') ?? undefined}
        connections={connections.map((x) => [x.id, x.from])}
      />
      {found ? <Records query={query} found={found} /> : null}
    </>,
  )
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
    const value = storableId(raw)
    if (value !== undefined) return value
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
  const tagText = q('tag')
  const filter: OutboxFilter = {
    status: STATUSES.find((s) => s === status),
    connectionId: id('connection', 'connection'),
    batchId: id('batch', 'batch'),
    from: day('from', 'from'),
    to: day('to', 'to'),
    search: searchText,
    tags: tagText === undefined ? undefined : tagsOf(tagText, issues),
  }
  // Calendar days as YYYY-MM-DD compare as text.
  if (filter.from !== undefined && filter.to !== undefined && filter.from > filter.to) {
    issues.push({ path: ['to'], message: `must not be before from (${filter.from})`, code: 'too_small' })
  }
  const before = id('before', 'page')
  const search = new URLSearchParams()
  for (const name of ['status', 'connection', 'batch', 'from', 'to', 'q', 'tag']) {
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

/** The tag field: `name:value` pairs separated by spaces or commas, every one to match. */
function tagsOf(text: string, issues: ValidationIssue[]): Tag[] | undefined {
  const parts = text.split(/[\s,]+/).filter(Boolean)
  const tags = parts.flatMap((part) => tagOfFilter(part) ?? [])
  if (tags.length === parts.length && parts.length <= MAX_TAGS) return tags
  const message = `must be name:value (letters, digits, _ and -), at most ${MAX_TAGS}, separated by spaces`
  issues.push({ path: ['tag'], message, code: 'invalid_format' })
  return undefined
}

/** `tag` is the tag field as it was typed, shown again as it was. */
function FilterForm(props: {
  filter: OutboxFilter
  tag: string | undefined
  connections: [number, string][]
}) {
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
        <label>
          Tag
          <input
            name="tag"
            value={props.tag}
            placeholder="name:value"
            spellcheck={false}
            autocapitalize="off"
          />
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

function Row(props: { record: OutboxRecord }) {
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
