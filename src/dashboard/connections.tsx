import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { AppError } from '../app-error.ts'
import {
  addConnection,
  type ConnectionView,
  deleteConnection,
  disableConnection,
  listConnections,
  pauseConnection,
  type QuotaInput,
  resumeConnection,
  updateConnection,
} from '../connections/connections.ts'
import { clearMailbox } from '../connections/mailbox.ts'
import { ownConnection, queuedMail } from '../connections/ownership.ts'
import { counted } from '../wording.ts'
import { ConfirmLink, confirmPage } from './confirm.tsx'
import { MailboxSection, mailboxOf, saveMailbox } from './connection-mailbox.tsx'
import { ConnectionStatus } from './connection-status.tsx'
import type { Dashboard, DashboardContext } from './env.ts'
import { ActionButton, PostForm, page, type Refusal, Table, When } from './layout.tsx'
import { type PostedFields, readPostedFields, wholeNumber } from './posted-fields.ts'
import { act } from './refusals.tsx'
import { resource, routes, signedIn } from './resource.ts'

const CONNECTIONS = resource('/dashboard/connections', ownView)
const LIST = CONNECTIONS.list
const one = CONNECTIONS.one

/** Connections: list, add (the login tested first), edit, its mailbox, disable, pause, delete. */
export function registerConnections(app: Dashboard): void {
  const on = routes(app, CONNECTIONS)
  on.list((c) => listPage(c, {}))
  on.create(create)
  on.detail((c, connection) => editPage(c, connection, {}))
  on.update(update)
  const change = (
    verb: string,
    run: (c: DashboardContext, id: number, form: PostedFields) => Promise<string>,
  ) =>
    on.action(verb, async (c, current) => {
      const form = await readPostedFields(c)
      return act(
        c,
        one(current.id),
        () => run(c, current.id, form),
        (refusal, status) => editPage(c, current, { refusal }, status),
      )
    })
  change('disable', async (c, id) => {
    const done = await disableConnection(signedIn(c).sql, id, true)
    return `Connection ${done.from} disabled: its queued mail waits until it is enabled.`
  })
  change('enable', async (c, id) => {
    const done = await disableConnection(signedIn(c).sql, id, false)
    return `Connection ${done.from} enabled.`
  })
  change('pause', async (c, id, form) => {
    const done = await pauseConnection(signedIn(c).sql, id, wholeNumber(form, 'minutes', 'Minutes'))
    return `Connection ${done.from} paused.`
  })
  change('resume', async (c, id) => {
    const done = await resumeConnection(signedIn(c).sql, id)
    return `Connection ${done.from} resumed.`
  })
  change('mailbox', saveMailbox)
  change('mailbox-clear', async (c, id) => {
    await clearMailbox(signedIn(c).sql, id)
    return 'Mailbox removed: Mailroom reads no reports for this connection.'
  })
  on.view('delete', async (c, connection) => {
    const { sql, accountId } = signedIn(c)
    const queued = await queuedMail(sql, accountId, connection.id)
    const only = (await listConnections(sql, accountId)).length === 1
    return deletePage(c, connection, queued, only)
  })
  on.action('delete', (c, connection) =>
    act(
      c,
      LIST,
      async () => {
        const { new_default_id } = await deleteConnection(signedIn(c).sql, connection.id)
        const next = new_default_id === null ? '' : ` Connection ${new_default_id} is now the default.`
        return `Connection ${connection.from} deleted.${connection.is_default ? next : ''}`
      },
      (refusal, status) => editPage(c, connection, { refusal }, status),
    ),
  )
}

async function create(c: DashboardContext) {
  const form = await readPostedFields(c)
  const { services, accountId } = signedIn(c)
  return act(
    c,
    LIST,
    async () => {
      const added = await addConnection(services, {
        accountId,
        host: form.text('host'),
        port: wholeNumber(form, 'port', 'Port') ?? 587,
        username: form.text('username'),
        password: form.text('password'),
        from: form.optional('from'),
        quota: quotaOf(form),
        rate: wholeNumber(form, 'rate', 'Rate'),
      })
      return `Connection ${added.from} added: the SMTP server accepted the login.`
    },
    (refusal, status) => listPage(c, { refusal, values: formValues(form) }, status),
  )
}

async function update(c: DashboardContext, current: ConnectionView) {
  const form = await readPostedFields(c)
  return act(
    c,
    one(current.id),
    async () => {
      await updateConnection(signedIn(c).services, current.id, {
        quota: quotaOf(form) ?? null,
        rate: wholeNumber(form, 'rate', 'Rate') ?? current.rate,
        password: form.text('password') || undefined,
      })
      return `Connection ${current.from} saved.`
    },
    (refusal, status) => editPage(c, current, { refusal, values: formValues(form) }, status),
  )
}

async function ownView(c: DashboardContext, id: number): Promise<ConnectionView> {
  const { sql, accountId } = signedIn(c)
  await ownConnection(sql, accountId, id)
  const view = (await listConnections(sql, accountId)).find((x) => x.id === id)
  if (!view) throw new AppError('UNKNOWN_CONNECTION', `There is no connection with ID ${id} on this account`)
  return view
}

/** The quota typed in the form: none when the amount is blank. */
function quotaOf(form: PostedFields): QuotaInput | undefined {
  const quota = wholeNumber(form, 'quota', 'Quota')
  return quota === undefined ? undefined : { quota, per: form.text('per') }
}

type Values = Record<string, string>

/** What was typed, to show again beside a refusal; never a password. */
function formValues(form: PostedFields): Values {
  return Object.fromEntries(
    ['host', 'port', 'username', 'from', 'quota', 'per', 'rate'].map((name) => [name, form.text(name)]),
  )
}

interface PageState {
  refusal?: Refusal
  values?: Values
}

async function listPage(c: DashboardContext, state: PageState, status: ContentfulStatusCode = 200) {
  const { sql, accountId } = signedIn(c)
  const connections = await listConnections(sql, accountId)
  const v = state.values ?? {}
  return page(
    c,
    { title: 'Connections', section: LIST, refusal: state.refusal, status },
    <>
      {connections.length === 0 ? (
        <p>No connection yet: add the SMTP login you send through below.</p>
      ) : (
        <Table head={['Sending address', 'Server', 'Quota', 'Rate', 'Status']}>
          {connections.map((x) => (
            <tr>
              <td class="wrap words">
                <a href={one(x.id)}>{x.from}</a>
                {x.is_default ? <mark class="tag">default</mark> : null}
              </td>
              <td class="wrap">
                {x.host}:{x.port}
              </td>
              <td>
                {x.quota === null ? <span class="muted">none</span> : `${x.quota} per ${x.quota_period}`}
              </td>
              <td>{x.rate} a minute</td>
              <td>
                <ConnectionStatus connection={x} />
              </td>
            </tr>
          ))}
        </Table>
      )}
      <details open={connections.length === 0 || state.refusal !== undefined}>
        <summary>Add a connection</summary>
        <PostForm action={LIST} token={c.get('formToken')}>
          <p>
            <small>
              Mailroom logs in to the server first, and saves nothing if the login fails. Ports 587 and 2525
              use STARTTLS, 465 uses TLS.
            </small>
          </p>
          <div class="grid">
            <label>
              SMTP server
              <input name="host" required placeholder="smtp.example.com" value={v.host} />
            </label>
            <label>
              Port
              <select name="port">
                {['587', '465', '2525'].map((port) => (
                  <option value={port} selected={v.port === port}>
                    {port}
                  </option>
                ))}
              </select>
            </label>
          </div>
          <div class="grid">
            <label>
              Username
              <input name="username" required autocomplete="off" value={v.username} />
            </label>
            <label>
              Password
              <input name="password" type="password" required autocomplete="new-password" />
            </label>
          </div>
          <label>
            Sending address <small class="muted">(the username, when that is an address)</small>
            <input name="from" type="email" placeholder="you@example.com" value={v.from} />
          </label>
          <QuotaFields values={v} />
          <button type="submit">Test the login and add</button>
        </PostForm>
      </details>
    </>,
  )
}

function QuotaFields(props: { values: Values }) {
  const v = props.values
  return (
    <div class="grid">
      <label>
        Quota <small class="muted">(blank: none)</small>
        <input name="quota" inputmode="numeric" pattern="[0-9]*" value={v.quota} />
      </label>
      <label>
        Per
        <select name="per">
          <option value="day" selected={v.per !== 'hour'}>
            day
          </option>
          <option value="hour" selected={v.per === 'hour'}>
            hour
          </option>
        </select>
      </label>
      <label>
        Rate <small class="muted">(emails a minute, 1 to 60000)</small>
        <input name="rate" inputmode="numeric" pattern="[0-9]*" value={v.rate} placeholder="60" />
      </label>
    </div>
  )
}

async function editPage(
  c: DashboardContext,
  connection: ConnectionView,
  state: PageState,
  status: ContentfulStatusCode = 200,
) {
  const token = c.get('formToken')
  const values = state.values ?? {
    quota: connection.quota === null ? '' : String(connection.quota),
    per: connection.quota_period ?? 'day',
    rate: String(connection.rate),
  }
  return page(
    c,
    { title: connection.from, section: LIST, refusal: state.refusal, status },
    <>
      <p>
        <a href={LIST}>← Connections</a>
      </p>
      <dl class="facts">
        <dt>Server</dt>
        <dd class="wrap">
          {connection.host}:{connection.port} ({connection.port === 465 ? 'TLS' : 'STARTTLS'})
        </dd>
        <dt>Username</dt>
        <dd class="words">{connection.username}</dd>
        <dt>Status</dt>
        <dd>
          <ConnectionStatus connection={connection} />
        </dd>
        <dt>Default</dt>
        <dd>{connection.is_default ? 'yes: sends when a request names no address' : 'no'}</dd>
        <dt>Added</dt>
        <dd>
          <When at={connection.created_at} />
        </dd>
      </dl>
      <section>
        <h2>Quota, rate and password</h2>
        <PostForm action={one(connection.id)} token={token}>
          <QuotaFields values={values} />
          <label>
            New password <small class="muted">(blank: unchanged; tested against the server first)</small>
            <input name="password" type="password" autocomplete="new-password" />
          </label>
          <button type="submit">Save</button>
        </PostForm>
      </section>
      <MailboxSection action={one(connection.id)} mailbox={await mailboxOf(c, connection.id)} token={token} />
      <Sending connection={connection} token={token} />
    </>,
  )
}

/** Whether the connection sends: disable or enable, pause or resume, delete. */
function Sending(props: { connection: ConnectionView; token: string }) {
  const { connection, token } = props
  return (
    <section>
      <h2>Sending</h2>
      <div class="actions">
        {connection.status === 'disabled' ? (
          <ActionButton action={`${one(connection.id)}/enable`} token={token} label="Enable" />
        ) : (
          <ActionButton action={`${one(connection.id)}/disable`} token={token} label="Disable" />
        )}
        {connection.status === 'paused' ? (
          <ActionButton action={`${one(connection.id)}/resume`} token={token} label="Resume" />
        ) : (
          <PostForm action={`${one(connection.id)}/pause`} token={token} class="inline pause">
            <input
              name="minutes"
              inputmode="numeric"
              pattern="[0-9]*"
              placeholder="minutes (blank: until resumed)"
              aria-label="Pause for how many minutes"
            />
            <button type="submit" class="outline">
              Pause
            </button>
          </PostForm>
        )}
        <ConfirmLink href={`${one(connection.id)}/delete`} label="Delete" />
      </div>
      <p>
        <small>
          Disabled: nothing is sent through it, and its queued mail waits until it is enabled. Paused: the
          same, until the pause ends.
        </small>
      </p>
    </section>
  )
}

function deletePage(c: DashboardContext, connection: ConnectionView, queued: number, only: boolean) {
  return confirmPage(c, {
    title: `Delete ${connection.from}?`,
    section: LIST,
    consequences: (
      <>
        <p>
          {queued === 0
            ? 'No mail is waiting on this connection.'
            : `${counted(queued, 'queued message')} will not be sent: ${queued === 1 ? 'it fails' : 'they fail'} with “connection deleted”.`}
        </p>
        <p>
          API keys scoped to it stop working.
          {only
            ? ' It is the account’s only connection: nothing can be sent until another is added.'
            : connection.is_default
              ? ' The oldest remaining connection becomes the default.'
              : ''}
        </p>
      </>
    ),
    action: `${one(connection.id)}/delete`,
    label: 'Delete the connection',
    back: one(connection.id),
  })
}
