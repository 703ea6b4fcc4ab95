import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { type ConnectionView, listConnections } from '../connections/connections.ts'
import {
  createForm,
  deleteForm,
  type FormSettings,
  getForm,
  type Form as HostedForm,
  listForms,
  updateForm,
} from '../forms/forms.ts'
import { counted } from '../wording.ts'
import type { Dashboard, DashboardContext } from './env.ts'
import { ActionButton, PostForm, page, type Refusal, Table, When } from './layout.tsx'
import { type PostedFields, readPostedFields, wholeNumber } from './posted-fields.ts'
import { act } from './refusals.tsx'
import { resource, routes, signedIn } from './resource.ts'
import { ConnectionChoice, formSnippet, PublicAddress } from './snippets.tsx'

const FORMS = resource('/dashboard/forms', (c, id) => {
  const { sql, accountId, services } = signedIn(c)
  return getForm(sql, accountId, id, services.config.publicUrl)
})
const LIST = FORMS.list
const one = FORMS.one

/** Forms: list, create, edit, delete; each with its public address and a snippet to paste. */
export function registerHostedForms(app: Dashboard): void {
  const on = routes(app, FORMS)
  on.list((c) => listPage(c, {}))
  on.create(create)
  on.detail((c, current) => formPage(c, current, {}))
  on.update(update)
  on.action('delete', (c, current) =>
    act(
      c,
      LIST,
      async () => {
        const { sql, accountId } = signedIn(c)
        await deleteForm(sql, accountId, current.id)
        return `Form “${current.name}” deleted; its address no longer takes submissions.`
      },
      (refusal, status) => formPage(c, current, { refusal }, status),
    ),
  )
}

async function create(c: DashboardContext) {
  const form = await readPostedFields(c)
  return act(
    c,
    LIST,
    async () => {
      const { sql, accountId, services } = signedIn(c)
      const created = await createForm(sql, accountId, settingsOf(form), services.config.publicUrl)
      return `Form “${created.name}” created: ${created.url}`
    },
    (refusal, status) => listPage(c, { refusal, values: settingsOf(form, false) }, status),
  )
}

async function update(c: DashboardContext, current: HostedForm) {
  const form = await readPostedFields(c)
  return act(
    c,
    one(current.id),
    async () => {
      const { sql, accountId, services } = signedIn(c)
      await updateForm(sql, accountId, current.id, settingsOf(form), services.config.publicUrl)
      return 'Form saved.'
    },
    (refusal, status) => formPage(c, current, { refusal }, status),
  )
}

/** The settings as typed: allowed origins one per line. */
function settingsOf(form: PostedFields, strict = true): FormSettings {
  return {
    name: form.text('name'),
    connectionId: strict ? wholeNumber(form, 'connection_id', 'Connection') : undefined,
    redirectUrl: form.optional('redirect_url'),
    allowedOrigins: form.text('allowed_origins').split(/\s+/).filter(Boolean),
  }
}

function FormFields(props: { values: Partial<FormSettings>; connections: ConnectionView[] }) {
  const { values } = props
  return (
    <>
      <label>
        Name <small class="muted">(the subject of each submission's email names it)</small>
        <input name="name" required maxlength={200} value={values.name ?? ''} />
      </label>
      <ConnectionChoice connections={props.connections} selected={values.connectionId ?? null} />
      <label>
        Redirect to{' '}
        <small class="muted">(optional: where people go after sending; else a thank-you page)</small>
        <input
          name="redirect_url"
          type="url"
          placeholder="https://example.com/thanks"
          value={values.redirectUrl ?? ''}
        />
      </label>
      <label>
        Allowed origins{' '}
        <small class="muted">(optional, one per line, like https://example.com; empty: any site)</small>
        <textarea name="allowed_origins" rows={2}>
          {(values.allowedOrigins ?? []).join('\n')}
        </textarea>
      </label>
    </>
  )
}

interface ListState {
  refusal?: Refusal
  values?: FormSettings
}

async function listPage(c: DashboardContext, state: ListState, status: ContentfulStatusCode = 200) {
  const { sql, accountId, services } = signedIn(c)
  const [forms, connections] = await Promise.all([
    listForms(sql, accountId, services.config.publicUrl),
    listConnections(sql, accountId),
  ])
  return page(
    c,
    { title: 'Forms', section: LIST, refusal: state.refusal, status },
    <>
      {forms.length === 0 ? (
        <p>
          No form yet: paste one into your site, and each submission is emailed to you from your connection,
          like any queued email.
        </p>
      ) : (
        <Table head={['Form', 'Submissions', 'Public address', 'Created']}>
          {forms.map((f) => (
            <tr>
              <td class="wrap">
                <a href={one(f.id)}>{f.name}</a>
              </td>
              <td>{f.submissions}</td>
              <td class="wrap">
                <small>{f.url}</small>
              </td>
              <td class="nowrap">
                <When at={f.created_at} />
              </td>
            </tr>
          ))}
        </Table>
      )}
      <details open={forms.length === 0 || state.values !== undefined}>
        <summary>Create a form</summary>
        <PostForm action={LIST} token={c.get('formToken')}>
          <FormFields values={state.values ?? {}} connections={connections} />
          <button type="submit">Create the form</button>
        </PostForm>
      </details>
    </>,
  )
}

async function formPage(
  c: DashboardContext,
  form: HostedForm,
  state: { refusal?: Refusal },
  status: ContentfulStatusCode = 200,
) {
  const { sql, accountId } = signedIn(c)
  const connections = await listConnections(sql, accountId)
  const token = c.get('formToken')
  return page(
    c,
    { title: form.name, section: LIST, refusal: state.refusal, status },
    <>
      <p>
        <a href={LIST}>← Forms</a>
      </p>
      <p>
        {counted(form.submissions, 'submission')} · each one emailed from the connection to its own address;
        find them in the <a href="/dashboard/outbox">outbox</a>.
      </p>
      <PublicAddress id="form" url={form.url} snippet={formSnippet(form.url)} />
      <section>
        <h2>Settings</h2>
        <PostForm action={one(form.id)} token={token}>
          <FormFields
            values={{
              name: form.name,
              connectionId: form.connection_id ?? undefined,
              redirectUrl: form.redirect_url ?? undefined,
              allowedOrigins: form.allowed_origins,
            }}
            connections={connections}
          />
          <button type="submit">Save</button>
        </PostForm>
        <details>
          <summary>Delete the form…</summary>
          <p>Its address stops taking submissions; emails already sent stay in the outbox.</p>
          <ActionButton
            action={`${one(form.id)}/delete`}
            token={token}
            label="Delete the form"
            variant="contrast"
          />
        </details>
      </section>
    </>,
  )
}
