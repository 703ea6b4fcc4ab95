import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { readValues } from '../audiences/member-lines.ts'
import { TemplateCreateRequestSchema, TemplateUpdateRequestSchema } from '../generated/routes.ts'
import { compileContent, placeholderNames } from '../templates/placeholders.ts'
import {
  createTemplate,
  deleteTemplate,
  getTemplate,
  listTemplates,
  type Template,
  updateTemplate,
} from '../templates/templates.ts'
import type { Dashboard, DashboardContext } from './env.ts'
import { HtmlPreview } from './html-preview.tsx'
import { ActionButton, PostForm, page, type Refusal, Table, When } from './layout.tsx'
import { type PostedFields, readPostedFields, validated } from './posted-fields.ts'
import { act } from './refusals.tsx'
import { resource, routes, signedIn } from './resource.ts'

const TEMPLATES = resource('/dashboard/templates', (c, id) => {
  const { sql, accountId } = signedIn(c)
  return getTemplate(sql, accountId, id)
})
const LIST = TEMPLATES.list
const one = TEMPLATES.one

/** The fields of a template form, as typed: an empty body box means no such body. */
interface Fields {
  name: string
  subject: string
  text_body: string
  html_body: string
}

function fieldsOf(form: PostedFields): Fields {
  return {
    name: form.text('name'),
    subject: form.text('subject'),
    text_body: form.text('text_body'),
    html_body: form.text('html_body'),
  }
}

function fieldsOfTemplate(t: Template): Fields {
  return { name: t.name, subject: t.subject, text_body: t.text_body ?? '', html_body: t.html_body ?? '' }
}

/** Templates: list, create, edit with a rendered preview, delete. */
export function registerTemplates(app: Dashboard): void {
  const on = routes(app, TEMPLATES)
  on.list((c) => listPage(c, {}))
  on.create(create)
  on.detail((c, template) => editPage(c, template, { fields: fieldsOfTemplate(template) }))
  on.update(update)
  // Renders what is in the form, saved or not, with the sample values given.
  on.action('preview', async (c, template) => {
    const form = await readPostedFields(c)
    return editPage(c, template, { fields: fieldsOf(form), sample: form.text('sample') })
  })
  on.action('delete', (c, template) =>
    act(
      c,
      LIST,
      async () => {
        const { sql, accountId } = signedIn(c)
        await deleteTemplate(sql, accountId, template.id)
        return `Template “${template.name}” deleted. Batches already created with it are not affected.`
      },
      (refusal, status) => editPage(c, template, { refusal, fields: fieldsOfTemplate(template) }, status),
    ),
  )
}

async function create(c: DashboardContext) {
  const fields = fieldsOf(await readPostedFields(c))
  return act(
    c,
    LIST,
    async () => {
      const content = validated(TemplateCreateRequestSchema, {
        name: fields.name,
        subject: fields.subject,
        text_body: fields.text_body || undefined,
        html_body: fields.html_body || undefined,
      })
      const { sql, accountId } = signedIn(c)
      const template = await createTemplate(sql, accountId, content)
      return `Template “${template.name}” created.`
    },
    (refusal, status) => listPage(c, { refusal, fields }, status),
  )
}

async function update(c: DashboardContext, template: Template) {
  const form = await readPostedFields(c)
  const fields = fieldsOf(form)
  return act(
    c,
    one(template.id),
    async () => {
      const change = validated(TemplateUpdateRequestSchema, { name: fields.name, subject: fields.subject })
      const { sql, accountId } = signedIn(c)
      await updateTemplate(sql, accountId, template.id, {
        ...change,
        text_body: fields.text_body || null,
        html_body: fields.html_body || null,
      })
      return 'Template saved.'
    },
    (refusal, status) => editPage(c, template, { refusal, fields, sample: form.text('sample') }, status),
  )
}

interface ListState {
  refusal?: Refusal
  fields?: Fields
}

async function listPage(c: DashboardContext, state: ListState, status: ContentfulStatusCode = 200) {
  const { sql, accountId } = signedIn(c)
  const templates = await listTemplates(sql, accountId)
  return page(
    c,
    { title: 'Templates', section: LIST, refusal: state.refusal, status },
    <>
      {templates.length === 0 ? (
        <p>
          No template yet: a saved subject and bodies, with <code>{'{{placeholders}}'}</code> filled per
          recipient when a batch is sent to an audience.
        </p>
      ) : (
        <Table head={['Template', 'Subject', 'Changed']}>
          {templates.map((t) => (
            <tr>
              <td class="wrap">
                <a href={one(t.id)}>{t.name}</a> <small class="muted">#{t.id}</small>
              </td>
              <td class="wrap">{t.subject}</td>
              <td class="nowrap">
                <When at={t.updated_at} />
              </td>
            </tr>
          ))}
        </Table>
      )}
      <details open={templates.length === 0 || state.fields !== undefined}>
        <summary>Create a template</summary>
        <PostForm action={LIST} token={c.get('formToken')}>
          <TemplateFields fields={state.fields} />
          <button type="submit">Create</button>
        </PostForm>
      </details>
    </>,
  )
}

function TemplateFields(props: { fields?: Fields | undefined }) {
  const f = props.fields
  return (
    <>
      <label>
        Name
        <input name="name" required maxlength={255} value={f?.name} />
      </label>
      <label>
        Subject
        <input name="subject" required maxlength={998} value={f?.subject} />
      </label>
      <label>
        Text body
        <textarea name="text_body" rows={6}>
          {f?.text_body ?? ''}
        </textarea>
      </label>
      <label>
        HTML body
        <textarea name="html_body" rows={6} class="code">
          {f?.html_body ?? ''}
        </textarea>
      </label>
      <small>At least one body. Placeholders: {'{{name}}'}, filled from a member's values.</small>
    </>
  )
}

interface EditState {
  refusal?: Refusal
  fields: Fields
  sample?: string
}

/** Each placeholder shown by its own name until sample values are given. */
function defaultSample(fields: Fields): string {
  return placeholderNames(fields)
    .map((name) => `${name}=${name}`)
    .join(', ')
}

function editPage(
  c: DashboardContext,
  template: Template,
  state: EditState,
  status: ContentfulStatusCode = 200,
) {
  const token = c.get('formToken')
  const sample = state.sample ?? defaultSample(state.fields)
  const preview = compileContent({
    subject: state.fields.subject,
    text_body: state.fields.text_body || null,
    html_body: state.fields.html_body || null,
  })(readValues(sample))
  return page(
    c,
    { title: template.name, section: LIST, refusal: state.refusal, status },
    <>
      <p>
        <a href={LIST}>← Templates</a> · ID {template.id}, for <code>template_id</code> in a batch · changed{' '}
        <When at={template.updated_at} />
      </p>
      <div class="grid template-edit">
        <PostForm action={one(template.id)} token={token}>
          <TemplateFields fields={state.fields} />
          <label>
            Sample values <small class="muted">(for the preview: name=Ann, VIP)</small>
            <input name="sample" value={sample} />
          </label>
          <div class="actions">
            <button type="submit">Save</button>
            <button type="submit" class="secondary" formaction={`${one(template.id)}/preview`}>
              Preview
            </button>
          </div>
        </PostForm>
        <section class="preview" aria-label="Preview">
          <h2>Preview</h2>
          <p>
            <strong>Subject:</strong> <span class="wrap">{preview.subject}</span>
          </p>
          {preview.text_body !== undefined ? <pre class="body-text">{preview.text_body}</pre> : null}
          {preview.html_body !== undefined ? <HtmlPreview html={preview.html_body} /> : null}
        </section>
      </div>
      <details>
        <summary>Delete the template…</summary>
        <p>Batches already created with it keep their content.</p>
        <ActionButton
          action={`${one(template.id)}/delete`}
          token={token}
          label="Delete the template"
          variant="contrast"
        />
      </details>
    </>,
  )
}
