import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { invalidInput } from '../app-error.ts'
import { type ConnectionView, listConnections } from '../connections/connections.ts'
import { type ApiKey, createKey, listKeys, revokeKey, rotateKey, scopeKey } from '../keys/keys.ts'
import { ownKey } from '../keys/ownership.ts'
import { ConfirmLink, confirmPage } from './confirm.tsx'
import type { Dashboard, DashboardContext } from './env.ts'
import { PostForm, page, type Refusal, Table, When } from './layout.tsx'
import { storableId } from './params.ts'
import { type PostedFields, readPostedFields, wholeNumber } from './posted-fields.ts'
import { act, refused } from './refusals.tsx'
import { resource, routes, signedIn } from './resource.ts'

const KEYS = resource('/dashboard/keys', (c, id) => {
  const { sql, accountId } = signedIn(c)
  return ownKey(sql, accountId, id)
})
const LIST = KEYS.list

/** API keys: list, create (the secret shown once), change scope, rotate, revoke. */
export function registerKeys(app: Dashboard): void {
  const on = routes(app, KEYS)
  on.list((c) => keysPage(c, {}))
  on.create(create)
  on.view('rotate', rotateConfirmation)
  on.view('revoke', revokeConfirmation)
  on.action('rotate', async (c, key) => {
    try {
      const rotated = await rotateKey(signedIn(c).sql, key.id)
      return keysPage(c, { secret: { name: key.name, key: rotated.key, rotated: true } })
    } catch (error) {
      return refused(error, (refusal, status) => keysPage(c, { refusal }, status))
    }
  })
  on.action('revoke', (c, key) =>
    act(
      c,
      LIST,
      async () => {
        await revokeKey(signedIn(c).sql, key.id)
        return `Key “${key.name}” revoked: it authenticates nothing from now on.`
      },
      (refusal, status) => keysPage(c, { refusal }, status),
    ),
  )
  on.action('scope', async (c, key) => {
    const form = await readPostedFields(c)
    return act(
      c,
      LIST,
      async () => {
        const scoped = await scopeKey(signedIn(c).sql, key.id, scopeOf(form) ?? null)
        return `Key “${key.name}” now sends through ${scoped.connection_id === null ? 'any connection' : 'one connection'}.`
      },
      (refusal, status) => keysPage(c, { refusal }, status),
    )
  })
}

async function create(c: DashboardContext) {
  const form = await readPostedFields(c)
  try {
    const { sql, accountId } = signedIn(c)
    const created = await createKey(sql, {
      accountId,
      name: form.text('name'),
      connectionId: scopeOf(form),
      expiresInDays: wholeNumber(form, 'expires_in_days', 'Expiry'),
    })
    // Shown in this answer only: the secret is never stored, so no later page can show it.
    return keysPage(c, { secret: { name: created.name, key: created.key, rotated: false } })
  } catch (error) {
    return refused(error, (refusal, status) =>
      keysPage(
        c,
        { refusal, values: { name: form.text('name'), days: form.text('expires_in_days') } },
        status,
      ),
    )
  }
}

function rotateConfirmation(c: DashboardContext, key: ApiKey) {
  return confirmPage(c, {
    title: `Rotate the secret of “${key.name}”?`,
    section: LIST,
    consequences: (
      <p>
        Its current secret stops working at once: whatever sends with it is refused until it uses the new one.
        The new secret is shown once, on the next page.
      </p>
    ),
    action: `${KEYS.one(key.id)}/rotate`,
    label: 'Rotate the secret',
    back: LIST,
    keep: 'Keep the current secret',
  })
}

function revokeConfirmation(c: DashboardContext, key: ApiKey) {
  return confirmPage(c, {
    title: `Revoke “${key.name}”?`,
    section: LIST,
    consequences: (
      <p>
        It stops working at once, for good: whatever sends with it is refused. A revoked key cannot be made to
        work again; create another to replace it.
      </p>
    ),
    action: `${KEYS.one(key.id)}/revoke`,
    label: 'Revoke the key',
    back: LIST,
  })
}

/** The connection a key is scoped to: undefined for all of them. */
function scopeOf(form: PostedFields): number | undefined {
  const raw = form.text('connection')
  if (raw === '' || raw === 'all') return undefined
  const id = storableId(raw)
  if (id === undefined) {
    throw invalidInput([{ path: ['connection'], message: 'Choose a connection', code: 'invalid_value' }])
  }
  return id
}

interface KeysState {
  refusal?: Refusal
  values?: { name: string; days: string }
  secret?: { name: string; key: string; rotated: boolean }
}

async function keysPage(c: DashboardContext, state: KeysState, status: ContentfulStatusCode = 200) {
  const { sql, accountId } = signedIn(c)
  const [keys, connections] = await Promise.all([listKeys(sql, accountId), listConnections(sql, accountId)])
  const token = c.get('formToken')
  return page(
    c,
    { title: 'API keys', section: LIST, refusal: state.refusal, status },
    <>
      {state.secret ? <NewSecret {...state.secret} /> : null}
      {keys.length === 0 ? (
        <p>
          No API key yet. Create one below, then send with it: <code>Authorization: Bearer &lt;key&gt;</code>.
        </p>
      ) : (
        <Table head={['Name', 'Key', 'Sends through', 'Expires', 'Last used', 'Status']}>
          {keys.map((key) => (
            <KeyRow apiKey={key} connections={connections} token={token} />
          ))}
        </Table>
      )}
      <details open={keys.length === 0 || state.values !== undefined}>
        <summary>Create a key</summary>
        <PostForm action={LIST} token={token}>
          <div class="grid">
            <label>
              Name
              <input
                name="name"
                required
                maxlength={255}
                value={state.values?.name}
                placeholder="production"
              />
            </label>
            <label for="new-key-scope">
              Sends through
              <ScopeSelect id="new-key-scope" connections={connections} current={null} />
            </label>
            <label>
              Expires after <small class="muted">(days, 7 to 365; blank: never)</small>
              <input name="expires_in_days" inputmode="numeric" pattern="[0-9]*" value={state.values?.days} />
            </label>
          </div>
          <button type="submit">Create the key</button>
        </PostForm>
      </details>
    </>,
  )
}

function NewSecret(props: { name: string; key: string; rotated: boolean }) {
  return (
    <article class="secret">
      <header>
        <strong>{props.rotated ? `New secret for “${props.name}”` : `Key “${props.name}” created`}</strong>
      </header>
      <p>Copy it now: this is the only time it is shown. Mailroom keeps only its hash.</p>
      <div class="copy">
        <input id="new-key" class="key-text" readonly value={props.key} aria-label="The new key" />
        <button type="button" class="copy-button" data-copy="new-key" hidden>
          Copy
        </button>
      </div>
      {props.rotated ? <p>The old secret has stopped working.</p> : null}
    </article>
  )
}

function scopeLabel(key: ApiKey, connections: ConnectionView[]): string {
  if (key.status === 'connection_deleted') return 'a deleted connection'
  if (key.connection_id === null) return 'any connection'
  return connections.find((x) => x.id === key.connection_id)?.from ?? `connection ${key.connection_id}`
}

function KeyRow(props: { apiKey: ApiKey; connections: ConnectionView[]; token: string }) {
  const { apiKey: key, connections } = props
  return (
    <tr>
      {/* The key's actions sit under its name: the column a narrow screen keeps in view. */}
      <td class="wrap">
        {key.name}
        {key.status === 'revoked' ? null : <KeyActions {...props} />}
      </td>
      <td>
        <code>{key.prefix}…</code>
      </td>
      <td class="wrap words">{scopeLabel(key, connections)}</td>
      <td>
        <When at={key.expires_at} empty="never" />
      </td>
      <td>
        <When at={key.last_used_at} empty="never" />
      </td>
      <td>
        <mark class={`tag ${key.status === 'active' ? 'good' : 'bad'}`}>{key.status.replace('_', ' ')}</mark>
      </td>
    </tr>
  )
}

function KeyActions(props: { apiKey: ApiKey; connections: ConnectionView[]; token: string }) {
  const { apiKey: key, connections, token } = props
  return (
    <details class="key-actions">
      <summary>Change…</summary>
      <div class="menu">
        <PostForm action={`${LIST}/${key.id}/scope`} token={token}>
          <label for={`scope-${key.id}`}>
            Sends through
            <ScopeSelect id={`scope-${key.id}`} connections={connections} current={key.connection_id} />
          </label>
          <button type="submit" class="outline">
            Change scope
          </button>
        </PostForm>
        <div class="actions">
          <ConfirmLink href={`${LIST}/${key.id}/rotate`} label="Rotate the secret" />
          <ConfirmLink href={`${LIST}/${key.id}/revoke`} label="Revoke" />
        </div>
      </div>
    </details>
  )
}

function ScopeSelect(props: { id: string; connections: ConnectionView[]; current: number | null }) {
  return (
    <select name="connection" id={props.id}>
      <option value="all" selected={props.current === null}>
        Any connection
      </option>
      {props.connections.map((x) => (
        <option value={String(x.id)} selected={props.current === x.id}>
          {x.from}
        </option>
      ))}
    </select>
  )
}
