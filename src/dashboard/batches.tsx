import type { ContentfulStatusCode } from 'hono/utils/http-status'
import {
  type Batch,
  type BatchOwner,
  cancelOwnBatch,
  deleteOwnBatch,
  failedRecipients,
  listBatches,
  ownBatch,
  retryFailures,
} from '../batches/batch-pages.ts'
import type { FailedRecipient } from '../db/outbox-types.ts'
import { isBatchCancelable } from '../sending/scheduling.ts'
import { counted } from '../wording.ts'
import { ConfirmLink, confirmPage } from './confirm.tsx'
import type { Dashboard, DashboardContext } from './env.ts'
import { ActionButton, Pager, page, type Refusal, Table, When } from './layout.tsx'
import { storableId } from './params.ts'
import { act, refused } from './refusals.tsx'
import { resource, routes, signedIn } from './resource.ts'

const BATCHES = resource('/dashboard/batches', (c, id) => ownBatch(signedIn(c).sql, owner(c), id))
const LIST = BATCHES.list
const one = BATCHES.one
/** A running batch's page refreshes its progress this often (seconds). */
const LIVE_EVERY = 2

function owner(c: DashboardContext): BatchOwner {
  const { accountId, plan } = signedIn(c).session
  return { accountId, plan }
}

/** A keyset cursor from the address; a value that is no ID starts from the beginning. */
function cursor(c: DashboardContext, name: string): number | undefined {
  return storableId(c.req.query(name))
}

/** Batches: list with progress; a page per batch with live progress, failed recipients, retry and delete. */
export function registerBatches(app: Dashboard): void {
  const on = routes(app, BATCHES)
  on.list(listPage)
  on.detail((c, batch) => batchPage(c, batch, {}))
  on.view('live', async (c, batch) => {
    const failures = await failedRecipients(signedIn(c).sql, owner(c), batch.id)
    return c.html(<Progress c={c} batch={batch} failures={failures} live />)
  })
  on.action('retry', (c, batch) =>
    act(
      c,
      one(batch.id),
      async () => {
        await retryFailures(signedIn(c).sql, owner(c), batch.id)
        const n = batch.failed_count
        return n === 0
          ? 'The batch has no failed recipient to retry.'
          : `${counted(n, 'failed recipient')} queued again.`
      },
      (refusal, status) => batchPage(c, batch, { refusal }, status),
    ),
  )
  on.view('cancel', (c, batch) =>
    confirmPage(c, {
      title: `Cancel “${batch.name}”?`,
      section: LIST,
      consequences: (
        <p>
          Its messages not yet tried are canceled and never sent; those already sent stay sent. A canceled
          batch cannot be resumed.
        </p>
      ),
      action: `${one(batch.id)}/cancel`,
      label: 'Cancel the batch',
      back: one(batch.id),
      keep: 'Keep it going',
    }),
  )
  on.action('cancel', (c, batch) =>
    act(
      c,
      one(batch.id),
      async () => {
        const canceled = await cancelOwnBatch(signedIn(c).sql, owner(c), batch.id)
        return `Batch “${batch.name}” canceled; ${counted(canceled.sent_count, 'message')} had been sent.`
      },
      async (refusal, status) =>
        batchPage(c, await ownBatch(signedIn(c).sql, owner(c), batch.id), { refusal }, status),
    ),
  )
  on.action('delete', (c, batch) =>
    act(
      c,
      LIST,
      async () => {
        await deleteOwnBatch(signedIn(c).sql, owner(c), batch.id)
        return `Batch “${batch.name}” deleted; its messages stay in the outbox until their retention ends.`
      },
      (refusal, status) => batchPage(c, batch, { refusal }, status),
    ),
  )
}

async function listPage(c: DashboardContext) {
  const before = cursor(c, 'before')
  try {
    const { batches, older } = await listBatches(signedIn(c).sql, owner(c), before)
    return page(
      c,
      { title: 'Batches', section: LIST },
      <>
        {batches.length === 0 ? (
          <p>
            No batch yet. Batches are sent through the API: <code>POST /v1/send/batch</code>.
          </p>
        ) : (
          <BatchTable batches={batches} />
        )}
        <Pager
          newer={before !== undefined ? LIST : undefined}
          older={older !== undefined ? `${LIST}?before=${older}` : undefined}
        />
      </>,
    )
  } catch (error) {
    return refused(error, (refusal, status) =>
      page(c, { title: 'Batches', section: LIST, refusal, status }, null),
    )
  }
}

function ended(batch: Batch): boolean {
  return batch.status === 'completed' || batch.status === 'failed' || batch.status === 'canceled'
}

function BatchTable(props: { batches: Batch[] }) {
  return (
    <Table head={['Batch', 'Status', 'Progress', 'Created']}>
      {props.batches.map((b) => (
        <tr>
          <td class="wrap">
            <a href={one(b.id)}>{b.name}</a>
          </td>
          <td>
            <BatchStatus status={b.status} />
          </td>
          <td>
            <progress value={b.sent_count + b.failed_count} max={b.total_count} />
            <small>
              {b.sent_count} sent, {b.failed_count} failed of {b.total_count}
            </small>
          </td>
          <td class="nowrap">
            <When at={b.created_at} />
          </td>
        </tr>
      ))}
    </Table>
  )
}

function BatchStatus(props: { status: Batch['status'] }) {
  const tone = { completed: 'good', failed: 'bad', running: 'warn', pending: '', canceled: '' }[props.status]
  return <mark class={`tag ${tone}`}>{props.status}</mark>
}

async function batchPage(
  c: DashboardContext,
  batch: Batch,
  state: { refusal?: Refusal },
  status: ContentfulStatusCode = 200,
) {
  const after = cursor(c, 'after')
  const failures = await failedRecipients(signedIn(c).sql, owner(c), batch.id, after)
  return page(
    c,
    { title: batch.name, section: LIST, refusal: state.refusal, status },
    <>
      <p>
        <a href={LIST}>← Batches</a> ·{' '}
        <a href={`/dashboard/outbox?batch=${batch.id}`}>its messages in the outbox</a>
      </p>
      <Progress c={c} batch={batch} failures={failures} live={after === undefined} />
      {failures.more !== undefined || after !== undefined ? (
        <Pager
          newer={after !== undefined ? one(batch.id) : undefined}
          older={failures.more !== undefined ? `${one(batch.id)}?after=${failures.more}` : undefined}
        />
      ) : null}
      {isBatchCancelable(batch.status) ? (
        <section>
          <h2>Cancel</h2>
          <p>
            <small>Stops it: its messages not yet tried are never sent.</small>
          </p>
          <ConfirmLink href={`${one(batch.id)}/cancel`} label="Cancel the batch" />
        </section>
      ) : null}
      {ended(batch) ? (
        <section>
          <h2>Delete</h2>
          <p>
            <small>
              Its recipient list goes; its messages stay in the outbox until their retention ends.
            </small>
          </p>
          <ActionButton
            action={`${one(batch.id)}/delete`}
            token={c.get('formToken')}
            label="Delete the batch"
            variant="contrast"
          />
        </section>
      ) : null}
    </>,
  )
}

/**
 * Counts, progress and failed recipients. On the first page of a batch still going, the
 * dashboard's script fetches it again every few seconds until the batch ends.
 */
function Progress(props: {
  c: DashboardContext
  batch: Batch
  failures: { failures: FailedRecipient[] }
  live: boolean
}) {
  const { batch, failures } = props
  const going = props.live && !ended(batch)
  const waiting = batch.total_count - batch.sent_count - batch.failed_count
  return (
    <section
      class="progress"
      data-live={going ? `${one(batch.id)}/live` : undefined}
      data-live-every={going ? String(LIVE_EVERY) : undefined}
      aria-live="polite"
    >
      <p>
        <BatchStatus status={batch.status} /> <strong>{batch.progress}%</strong> handled
      </p>
      <progress value={batch.sent_count + batch.failed_count} max={batch.total_count} />
      <dl class="facts">
        <dt>Recipients</dt>
        <dd>{batch.total_count}</dd>
        <dt>Sent</dt>
        <dd>{batch.sent_count}</dd>
        <dt>Failed</dt>
        <dd>{batch.failed_count}</dd>
        <dt>{batch.status === 'canceled' ? 'Canceled' : 'Waiting'}</dt>
        <dd>{waiting}</dd>
        {batch.scheduled_at ? (
          <>
            <dt>Scheduled for</dt>
            <dd>
              <When at={batch.scheduled_at} />
            </dd>
          </>
        ) : null}
        <dt>Created</dt>
        <dd>
          <When at={batch.created_at} />
        </dd>
        <dt>Last change</dt>
        <dd>
          <When at={batch.updated_at} />
        </dd>
      </dl>
      <h2>Failed recipients</h2>
      {failures.failures.length === 0 ? (
        <p class="muted">None{going ? ' so far' : ''}.</p>
      ) : (
        <>
          <ActionButton
            action={`${one(batch.id)}/retry`}
            token={props.c.get('formToken')}
            label={`Retry the ${batch.failed_count} failed`}
          />
          <Table head={['Recipient', 'Error', 'Attempts', 'When']}>
            {failures.failures.map((f) => (
              <tr>
                <td class="wrap words">
                  <a href={`/dashboard/outbox/${f.outbox_id}`}>{f.email}</a>
                </td>
                <td class="wrap words">{f.error ?? ''}</td>
                <td>{f.attempts}</td>
                <td class="nowrap">
                  <When at={f.updated_at} />
                </td>
              </tr>
            ))}
          </Table>
        </>
      )}
    </section>
  )
}
