import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { invalidInput } from '../app-error.ts'
import { WebhookEventTypeSchema } from '../generated/routes.ts'
import {
  createWebhook,
  deleteWebhook,
  getWebhook,
  listDeliveries,
  listWebhooks,
  rotateWebhookSecret,
  sendAgain,
  updateWebhook,
  type Webhook,
  type WebhookDelivery,
  type WebhookEventType,
} from '../webhooks/endpoints.ts'
import { ConfirmLink, confirmPage } from './confirm.tsx'
import type { Dashboard, DashboardContext } from './env.ts'
import { ActionButton, PostForm, page, type Refusal, Table, When } from './layout.tsx'
import { idParam } from './params.ts'
import { type PostedFields, readPostedFields } from './posted-fields.ts'
import { act, refused } from './refusals.tsx'
import { resource, routes, signedIn } from './resource.ts'

const WEBHOOKS = resource('/dashboard/webhooks', (c, id) => {
  const { sql, accountId } = signedIn(c)
  return getWebhook(sql, accountId, id)
})
const LIST = WEBHOOKS.list
const one = WEBHOOKS.one
const EVENT_TYPES = WebhookEventTypeSchema.options
/** Deliveries shown on an endpoint's page. */
const RECENT = 50

/**
 * Webhooks: list, create (the secret shown once), edit the event types, enable or disable,
 * rotate the secret, delete; an endpoint's recent deliveries, each of which can be sent again.
 */
export function registerWebhooks(app: Dashboard): void {
  const on = routes(app, WEBHOOKS)
  on.list((c) => listPage(c, {}))
  on.create(create)
  on.detail((c, current) => endpointPage(c, current, {}))
  on.update(update)
  on.view('rotate', rotateConfirmation)
  on.view('delete', deleteConfirmation)
  on.action('rotate', async (c, current) => {
    const { services, accountId } = signedIn(c)
    const rotated = await rotateWebhookSecret(services, accountId, current.id)
    return endpointPage(c, rotated.webhook, { secret: { value: rotated.secret, rotated: true } })
  })
  on.action('delete', (c, current) =>
    act(
      c,
      LIST,
      async () => {
        const { sql, accountId } = signedIn(c)
        await deleteWebhook(sql, accountId, current.id)
        return `Endpoint ${current.url} deleted: nothing more is sent to it.`
      },
      (refusal, status) => endpointPage(c, current, { refusal }, status),
    ),
  )
  on.action('deliveries/:delivery{[0-9]+}/again', (c, current) => {
    const delivery = idParam(c, 'delivery')
    return act(
      c,
      one(current.id),
      async () => {
        const { sql, accountId } = signedIn(c)
        await sendAgain(sql, accountId, current.id, delivery)
        return 'The event is sent again, with the same webhook-id.'
      },
      (refusal, status) => endpointPage(c, current, { refusal }, status),
    )
  })
}

async function create(c: DashboardContext) {
  const form = await readPostedFields(c)
  try {
    const { services, accountId } = signedIn(c)
    const created = await createWebhook(services, accountId, {
      url: form.text('url').trim(),
      events: eventsOf(form),
      description: form.optional('description'),
    })
    // Shown in this answer only, like a new API key.
    return endpointPage(c, created.webhook, { secret: { value: created.secret, rotated: false } })
  } catch (error) {
    return refused(error, (refusal, status) =>
      listPage(
        c,
        { refusal, values: { url: form.text('url'), description: form.text('description') } },
        status,
      ),
    )
  }
}

async function update(c: DashboardContext, current: Webhook) {
  const form = await readPostedFields(c)
  return act(
    c,
    one(current.id),
    async () => {
      const { services, accountId } = signedIn(c)
      await updateWebhook(services, accountId, current.id, {
        url: form.text('url').trim(),
        events: eventsOf(form),
        description: form.text('description').trim(),
        enabled: form.checked('enabled'),
      })
      return 'Endpoint saved.'
    },
    (refusal, status) => endpointPage(c, current, { refusal }, status),
  )
}

function rotateConfirmation(c: DashboardContext, current: Webhook) {
  return confirmPage(c, {
    title: `Rotate the signing secret of ${current.url}?`,
    section: LIST,
    consequences: (
      <p>
        Deliveries from now on are signed with a new secret, and the current one is no longer used: the
        endpoint refuses them until it checks with the new one. It is shown once, on the next page.
      </p>
    ),
    action: `${one(current.id)}/rotate`,
    label: 'Rotate the secret',
    back: one(current.id),
    keep: 'Keep the current secret',
  })
}

function deleteConfirmation(c: DashboardContext, current: Webhook) {
  return confirmPage(c, {
    title: `Delete the endpoint ${current.url}?`,
    section: LIST,
    consequences: (
      <p>Nothing more is sent to it, and its deliveries, those still being tried included, go with it.</p>
    ),
    action: `${one(current.id)}/delete`,
    label: 'Delete the endpoint',
    back: one(current.id),
  })
}

function eventsOf(form: PostedFields): WebhookEventType[] {
  const events = EVENT_TYPES.filter((type) => form.checked(`event:${type}`))
  if (events.length === 0) {
    throw invalidInput([{ path: ['events'], message: 'Choose at least one event', code: 'too_small' }])
  }
  return events
}

interface ListState {
  refusal?: Refusal
  values?: { url: string; description: string }
}

async function listPage(c: DashboardContext, state: ListState, status: ContentfulStatusCode = 200) {
  const { sql, accountId } = signedIn(c)
  const webhooks = await listWebhooks(sql, accountId)
  const token = c.get('formToken')
  return page(
    c,
    { title: 'Webhooks', section: LIST, refusal: state.refusal, status },
    <>
      <p>
        Mailroom POSTs the events you choose to your endpoints, signed (Standard Webhooks: headers{' '}
        <code>webhook-id</code>, <code>webhook-timestamp</code>, <code>webhook-signature</code>; check them
        with the SDK's <code>verifyWebhook</code>). A failed delivery is tried again for about a day.
      </p>
      {webhooks.length === 0 ? (
        <p>No endpoint yet.</p>
      ) : (
        <Table head={['Endpoint', 'Events', 'Status', 'Created']}>
          {webhooks.map((webhook) => (
            <tr>
              <td class="wrap">
                <a href={one(webhook.id)}>{webhook.url}</a>
                {webhook.description ? <small class="muted"> {webhook.description}</small> : null}
              </td>
              <td class="wrap">{webhook.events.join(', ')}</td>
              <td>
                <EndpointStatus webhook={webhook} />
              </td>
              <td>
                <When at={webhook.created_at} />
              </td>
            </tr>
          ))}
        </Table>
      )}
      <details open={webhooks.length === 0 || state.values !== undefined}>
        <summary>Add an endpoint</summary>
        <PostForm action={LIST} token={token}>
          <label>
            URL
            <input
              name="url"
              type="url"
              required
              maxlength={2000}
              value={state.values?.url}
              placeholder="https://example.com/hooks/mailroom"
            />
          </label>
          <label>
            Description <small class="muted">(optional)</small>
            <input name="description" maxlength={255} value={state.values?.description} />
          </label>
          <EventChoice chosen={EVENT_TYPES} />
          <button type="submit">Add the endpoint</button>
        </PostForm>
      </details>
    </>,
  )
}

function EndpointStatus(props: { webhook: Webhook }) {
  const { webhook } = props
  if (!webhook.enabled) {
    return (
      <>
        <mark class="tag bad">disabled</mark> <small>{webhook.disabled_reason}</small>
      </>
    )
  }
  if (webhook.failing_since) {
    return (
      <>
        <mark class="tag warn">failing</mark> <small>since {webhook.failing_since} UTC</small>
      </>
    )
  }
  return <mark class="tag good">enabled</mark>
}

function EventChoice(props: { chosen: readonly string[] }) {
  return (
    <fieldset>
      <legend>Events</legend>
      {EVENT_TYPES.map((type) => (
        <label>
          <input type="checkbox" name={`event:${type}`} value="1" checked={props.chosen.includes(type)} />{' '}
          {type}
        </label>
      ))}
    </fieldset>
  )
}

interface EndpointState {
  refusal?: Refusal
  secret?: { value: string; rotated: boolean }
}

async function endpointPage(
  c: DashboardContext,
  webhook: Webhook,
  state: EndpointState,
  status: ContentfulStatusCode = 200,
) {
  const { sql, accountId } = signedIn(c)
  const deliveries = await listDeliveries(sql, accountId, webhook.id, RECENT)
  const token = c.get('formToken')
  return page(
    c,
    { title: `Webhook ${webhook.url}`, section: LIST, refusal: state.refusal, status },
    <>
      <p>
        <a href={LIST}>← Webhooks</a>
      </p>
      {state.secret ? (
        <article class="secret">
          <header>
            <strong>{state.secret.rotated ? 'New signing secret' : 'Endpoint added'}</strong>
          </header>
          <p>Copy the signing secret now: this is the only time it is shown.</p>
          <div class="copy">
            <input
              id="new-key"
              class="key-text"
              readonly
              value={state.secret.value}
              aria-label="The signing secret"
            />
            <button type="button" class="copy-button" data-copy="new-key" hidden>
              Copy
            </button>
          </div>
          {state.secret.rotated ? (
            <p>Deliveries from now on are signed with it; the old one is no longer used.</p>
          ) : null}
        </article>
      ) : null}
      <p>
        Status: <EndpointStatus webhook={webhook} />
      </p>
      <h2>Recent deliveries</h2>
      {deliveries.length === 0 ? (
        <p>No delivery yet.</p>
      ) : (
        <Table head={['Event', 'webhook-id', 'Status', 'Attempts', 'Answer', 'Last attempt', '']}>
          {deliveries.map((delivery) => (
            <DeliveryRow webhook={webhook} delivery={delivery} token={token} />
          ))}
        </Table>
      )}
      <h2>Settings</h2>
      <PostForm action={one(webhook.id)} token={token}>
        <label>
          URL
          <input name="url" type="url" required maxlength={2000} value={webhook.url} />
        </label>
        <label>
          Description
          <input name="description" maxlength={255} value={webhook.description ?? ''} />
        </label>
        <EventChoice chosen={webhook.events} />
        <label>
          <input type="checkbox" name="enabled" value="1" checked={webhook.enabled} /> Enabled
        </label>
        <button type="submit">Save</button>
      </PostForm>
      <div class="actions">
        <ConfirmLink href={`${one(webhook.id)}/rotate`} label="Rotate the secret" />
        <ConfirmLink href={`${one(webhook.id)}/delete`} label="Delete" />
      </div>
    </>,
  )
}

function DeliveryRow(props: { webhook: Webhook; delivery: WebhookDelivery; token: string }) {
  const { delivery } = props
  const good = delivery.status === 'delivered'
  return (
    <tr>
      <td>{delivery.type}</td>
      {/* A long id breaks, so that the row fits a wide screen with its time and button. */}
      <td class="wrap">
        <code>{delivery.event_id}</code>
      </td>
      <td>
        <mark class={`tag ${good ? 'good' : delivery.status === 'failed' ? 'bad' : 'warn'}`}>
          {delivery.status}
        </mark>
        {delivery.next_attempt_at ? <small> next at {delivery.next_attempt_at} UTC</small> : null}
      </td>
      <td>{delivery.attempts}</td>
      <td class="wrap">
        {delivery.response_status === null ? null : <code>HTTP {delivery.response_status}</code>}
        {delivery.error ? <small> {delivery.error}</small> : null}
      </td>
      <td>
        <When at={delivery.last_attempt_at} empty="not yet" />
      </td>
      <td>
        <ActionButton
          action={`${one(props.webhook.id)}/deliveries/${delivery.id}/again`}
          token={props.token}
          label="Send again"
        />
      </td>
    </tr>
  )
}
