import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { AppError, invalidInput, type ValidationIssue } from '../app-error.ts'
import type { SuppressionReason } from '../suppressions/strength.ts'
import { listSuppressions, type Suppression, suppressManually } from '../suppressions/suppressions.ts'
import { typedSuppressions } from '../suppressions/typed-addresses.ts'
import { ConfirmLink } from './confirm.tsx'
import type { Dashboard, DashboardContext } from './env.ts'
import { Pager, page, Table, When } from './layout.tsx'
import { readPostedFields } from './posted-fields.ts'
import { act, refusalOf } from './refusals.tsx'
import { signedIn } from './resource.ts'
import {
  AddSuppressions,
  addedMessage,
  type ListState,
  registerSuppressionFiles,
  SUPPRESSIONS,
} from './suppression-forms.tsx'
import { registerSuppressionRemove, removeAddress } from './suppression-remove.tsx'

const REASONS: readonly SuppressionReason[] = ['hard_bounce', 'complaint', 'unsubscribe', 'manual']
/** The longest address there is: a longer prefix finds nothing. */
const MAX_SEARCH = 254
const PAGE_SIZE = 50

/**
 * The suppression list: searched by address, filtered by reason and paged; addresses added as
 * lines or from a CSV file, removed, and the whole list exported as CSV. Each action calls what
 * `/suppressions` calls.
 */
export function registerSuppressions(app: Dashboard): void {
  app.get(SUPPRESSIONS, (c) => listPage(c, {}))
  app.post(SUPPRESSIONS, async (c) => {
    const form = await readPostedFields(c)
    return act(
      c,
      SUPPRESSIONS,
      async () => {
        const { sql, accountId } = signedIn(c)
        const request = typedSuppressions(form.text('addresses'), form.text('scope'))
        const added = await suppressManually(sql, accountId, request, 'dashboard')
        return addedMessage(added)
      },
      (refusal, status) =>
        listPage(
          c,
          { refusal, typed: { addresses: form.text('addresses'), scope: form.text('scope') } },
          status,
        ),
    )
  })
  registerSuppressionFiles(app, listPage)
  registerSuppressionRemove(app)
}

interface Query {
  q: string | undefined
  reason: SuppressionReason | undefined
  cursor: string | undefined
  issues: ValidationIssue[]
}

function readQuery(c: DashboardContext): Query {
  const text = (name: string) => c.req.query(name)?.trim() || undefined
  const issues: ValidationIssue[] = []
  const q = text('q')
  if (q !== undefined && (q.length > MAX_SEARCH || q.includes('\u0000'))) {
    issues.push({
      path: ['search'],
      message: `at most ${MAX_SEARCH} characters, no NUL`,
      code: 'invalid_format',
    })
  }
  const reasonText = text('reason')
  const reason = REASONS.find((r) => r === reasonText)
  if (reasonText !== undefined && reason === undefined) {
    issues.push({ path: ['reason'], message: `must be one of ${REASONS.join(', ')}`, code: 'invalid_value' })
  }
  return { q, reason, cursor: text('cursor'), issues }
}

/** The address of the list with `query`'s search and filter, and `cursor` when given. */
function listAddress(query: Query, cursor?: string): string {
  const params = new URLSearchParams()
  if (query.q !== undefined) params.set('q', query.q)
  if (query.reason !== undefined) params.set('reason', query.reason)
  if (cursor !== undefined) params.set('cursor', cursor)
  return params.size ? `${SUPPRESSIONS}?${params}` : SUPPRESSIONS
}

async function listPage(c: DashboardContext, state: ListState, status: ContentfulStatusCode = 200) {
  const query = readQuery(c)
  const { sql, accountId } = signedIn(c)
  let found: Awaited<ReturnType<typeof listSuppressions>> | undefined
  let refusal = state.refusal
  try {
    if (query.issues.length) throw invalidInput(query.issues)
    found = await listSuppressions(sql, accountId, {
      email: query.q,
      reason: query.reason,
      cursor: query.cursor,
      limit: PAGE_SIZE,
    })
  } catch (error) {
    // A search or page the address names wrongly is said on the list; anything else goes on.
    if (!(error instanceof AppError) || error.code !== 'VALIDATION_ERROR') throw error
    refusal ??= refusalOf(error)
    status = 400
  }
  const token = c.get('formToken')
  return page(
    c,
    { title: 'Suppressions', section: SUPPRESSIONS, refusal, status },
    <>
      <p>
        Addresses Mailroom no longer mails for this account, one entry an address whatever its case. Scope{' '}
        <code>all</code> keeps every email from it, <code>marketing</code> only batches. A server saying the
        mailbox does not exist adds a <code>hard_bounce</code>, a complaint report a <code>complaint</code>,
        an unsubscribe link an <code>unsubscribe</code> (marketing).
      </p>
      <SearchForm query={query} />
      {found ? <Entries query={query} found={found} /> : null}
      <AddSuppressions token={token} typed={state.typed} />
      <p>
        <a href={`${SUPPRESSIONS}/export.csv`} download="suppressions.csv">
          Export the whole list as CSV
        </a>{' '}
        <small class="muted">(email, reason, scope, detail, source_type, source_id, created_at)</small>
      </p>
    </>,
  )
}

function SearchForm(props: { query: Query }) {
  const { query } = props
  return (
    <form method="get" action={SUPPRESSIONS} class="search with-filter">
      <input
        type="search"
        name="q"
        value={query.q}
        placeholder="Address begins with"
        aria-label="Search by address"
        spellcheck={false}
        autocapitalize="off"
      />
      <select name="reason" aria-label="Reason">
        <option value="">Any reason</option>
        {REASONS.map((r) => (
          <option value={r} selected={query.reason === r}>
            {r}
          </option>
        ))}
      </select>
      <button type="submit" class="outline">
        Search
      </button>
    </form>
  )
}

function Entries(props: { query: Query; found: Awaited<ReturnType<typeof listSuppressions>> }) {
  const { query, found } = props
  const filtered = query.q !== undefined || query.reason !== undefined
  return (
    <section>
      {found.suppressions.length === 0 ? (
        <p class="muted">{filtered ? 'No suppressed address matches.' : 'No address is suppressed.'}</p>
      ) : (
        <Table head={['Address', 'Reason', 'Detail', 'Source', 'Added']}>
          {found.suppressions.map((s) => (
            <Entry entry={s} />
          ))}
        </Table>
      )}
      <Pager
        newer={query.cursor !== undefined ? listAddress(query) : undefined}
        older={found.pagination.nextCursor ? listAddress(query, found.pagination.nextCursor) : undefined}
      />
    </section>
  )
}

function Entry(props: { entry: Suppression }) {
  const s = props.entry
  return (
    <tr>
      <td>
        <div class="lead-address">{s.email}</div>
        <ConfirmLink href={removeAddress(s.email)} label="Remove" />
      </td>
      <td class="nowrap">
        {s.reason}
        <small class="muted">scope {s.scope}</small>
      </td>
      <td class="wrap">
        <small>{s.detail ?? '—'}</small>
      </td>
      <td class="nowrap">
        <Source source={s.source} />
      </td>
      <td>
        <When at={s.created_at} />
      </td>
    </tr>
  )
}

/** Where an entry came from, linked to the email or audience when it names one. */
function Source(props: { source: Suppression['source'] }) {
  const { type, id } = props.source
  if (type === 'email' && id !== null) return <a href={`/dashboard/outbox/${id}`}>{`email ${id}`}</a>
  if (type === 'page' && id !== null) return <a href={`/dashboard/audiences/${id}`}>{`audience ${id}`}</a>
  return <span>{SOURCE_WORDS[type] ?? type}</span>
}

const SOURCE_WORDS: Partial<Record<Suppression['source']['type'], string>> = {
  api: 'the API',
  dashboard: 'the dashboard',
  operator: 'the operator command',
}
