import type { Child } from 'hono/jsx'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import type { DashboardContext } from './env.ts'
import { ActionButton, page, type Refusal, type Section } from './layout.tsx'

export interface Confirmation {
  /** The question, as the page's title ("Delete …?"). */
  title: string
  section: Section
  /** What happens, said before it does. */
  consequences: Child
  /** Where the button posts: the action itself. */
  action: string
  /** The button's words: what it does. */
  label: string
  /** The page to go back to, changing nothing. */
  back: string
  /** The back link's words. */
  keep?: string
  /** Why the action, once confirmed, was refused. */
  refusal?: Refusal
  status?: ContentfulStatusCode
}

/**
 * The step before an action that cannot be undone: a page of its own, reached by a link and
 * rendered by the server, so that it works without a script and a stray click changes nothing.
 * Its one button posts the action; its link leaves everything as it was.
 */
export function confirmPage(c: DashboardContext, confirmation: Confirmation) {
  return page(
    c,
    {
      title: confirmation.title,
      section: confirmation.section,
      refusal: confirmation.refusal,
      status: confirmation.status ?? 200,
    },
    <article class="confirm">
      {confirmation.consequences}
      <div class="actions">
        <ActionButton
          action={confirmation.action}
          token={c.get('formToken')}
          label={confirmation.label}
          variant="contrast"
        />
        <a href={confirmation.back} class="button-link secondary outline">
          {confirmation.keep ?? 'Keep it'}
        </a>
      </div>
    </article>,
  )
}

/** The link to a confirmation page, where a button would otherwise act at once. */
export function ConfirmLink(props: { href: string; label: string }) {
  return (
    <a href={props.href} class="button-link outline contrast">
      {`${props.label}…`}
    </a>
  )
}
