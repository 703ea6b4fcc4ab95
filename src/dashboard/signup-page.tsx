import type { ConnectionView } from '../connections/connections.ts'
import type { SignupPage, SignupPageSettings } from '../signups/signup-pages.ts'
import { counted } from '../wording.ts'
import { ActionButton, PostForm } from './layout.tsx'
import type { PostedFields } from './posted-fields.ts'
import { wholeNumber } from './posted-fields.ts'
import { ConnectionChoice, PublicAddress, signupSnippet } from './snippets.tsx'

/** The sign-up page's settings as typed in its form. */
export function signupPageSettings(form: PostedFields): SignupPageSettings {
  return {
    slug: form.text('slug').trim(),
    title: form.text('title'),
    description: form.text('description'),
    connectionId: wholeNumber(form, 'connection_id', 'Connection'),
    doubleOptIn: form.checked('double_opt_in'),
  }
}

/** The audience's hosted sign-up page: set up, its address and snippet, sign-ups, on and off. */
export function SignupPageSection(props: {
  action: string
  token: string
  page: SignupPage | undefined
  connections: ConnectionView[]
}) {
  const { page, action, token } = props
  return (
    <section id="signup-page">
      <h2>Sign-up page</h2>
      {page ? (
        <>
          <p>
            {page.enabled ? 'Open' : 'Disabled (answers 404)'} · {counted(page.signups, 'sign-up')} through it
            {page.double_opt_in ? ' · double opt-in' : ''}
          </p>
          <PublicAddress id="signup" url={page.url} snippet={signupSnippet(page.url)} />
          <ActionButton
            action={`${action}/${page.enabled ? 'disable' : 'enable'}`}
            token={token}
            label={page.enabled ? 'Disable the page' : 'Enable the page'}
            variant="outline secondary"
          />
        </>
      ) : (
        <p>
          People can subscribe to this audience through a page of its own, or a form pasted into your site.
        </p>
      )}
      <details open={!page}>
        <summary>{page ? 'Change the page' : 'Set up a sign-up page'}</summary>
        <PostForm action={action} token={token}>
          <label>
            Slug <small class="muted">(its address: /signup/slug; 3 to 64 of a-z, 0-9 and -)</small>
            {/* Browsers read a pattern with the `v` flag, where a bare `-` in a class is an error. */}
            <input name="slug" required pattern={'[a-z0-9\\-]{3,64}'} value={page?.slug ?? ''} />
          </label>
          <label>
            Title <small class="muted">(default: the audience's name)</small>
            <input name="title" maxlength={200} value={page?.title ?? ''} />
          </label>
          <label>
            Description <small class="muted">(optional)</small>
            <textarea name="description" maxlength={2000} rows={2}>
              {page?.description ?? ''}
            </textarea>
          </label>
          <ConnectionChoice connections={props.connections} selected={page?.connection_id ?? null} />
          <label>
            <input type="checkbox" name="double_opt_in" checked={page?.double_opt_in ?? false} />
            Double opt-in: people confirm from a link in an email before they join
          </label>
          <button type="submit">{page ? 'Save the page' : 'Create the page'}</button>
        </PostForm>
      </details>
    </section>
  )
}
