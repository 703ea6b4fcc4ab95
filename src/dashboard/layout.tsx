import type { Child, PropsWithChildren } from 'hono/jsx'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { ASSETS } from './assets.ts'
import type { DashboardContext } from './env.ts'

/** The dashboard's sections, in the order the navigation shows them. */
const SECTIONS = [
  ['/dashboard', 'Overview'],
  ['/dashboard/connections', 'Connections'],
  ['/dashboard/keys', 'API keys'],
  ['/dashboard/smtp', 'SMTP relay'],
  ['/dashboard/outbox', 'Outbox'],
  ['/dashboard/batches', 'Batches'],
  ['/dashboard/audiences', 'Audiences'],
  ['/dashboard/suppressions', 'Suppressions'],
  ['/dashboard/templates', 'Templates'],
  ['/dashboard/forms', 'Forms'],
  ['/dashboard/webhooks', 'Webhooks'],
  ['/dashboard/account', 'Account'],
] as const

export type Section = (typeof SECTIONS)[number][0]

function Document(props: PropsWithChildren<{ title: string }>) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="light dark" />
        <title>{`${props.title} · Mailroom`}</title>
        <link rel="stylesheet" href={ASSETS.pico.href} />
        <link rel="stylesheet" href={ASSETS.style.href} />
        <script src={ASSETS.script.href} defer />
      </head>
      <body>{props.children}</body>
    </html>
  )
}

async function respond(c: DashboardContext, page: Child, status: ContentfulStatusCode) {
  return c.html(`<!doctype html>${await page}`, status)
}

export interface PageOptions {
  title: string
  section: Section
  status?: ContentfulStatusCode
  /** A refusal to show above the content. */
  refusal?: Refusal | undefined
}

/** A page of a signed-in account: navigation, the message left for it, and `content`. */
export function page(c: DashboardContext, options: PageOptions, content: Child) {
  const session = c.get('session')
  return respond(
    c,
    <Document title={options.title}>
      <header class="container site">
        <nav>
          <ul>
            <li>
              <a href="/dashboard" class="brand">
                <strong>Mailroom</strong>
              </a>
            </li>
          </ul>
          <ul class="sections">
            {SECTIONS.map(([href, label]) => (
              <li>
                <a href={href} aria-current={href === options.section ? 'page' : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
      </header>
      <main class="container">
        <h1>{options.title}</h1>
        {session.flash ? (
          <p class="flash" role="status">
            {session.flash}
          </p>
        ) : null}
        {options.refusal ? <RefusalNotice refusal={options.refusal} /> : null}
        {content}
      </main>
      <footer class="container site">
        <PostForm action="/dashboard/logout" token={c.get('formToken')} class="sign-out">
          <small>
            Signed in as <strong>{session.email}</strong> ({session.plan === 'pro' ? 'Pro' : 'Free'} plan)
          </small>{' '}
          <button type="submit" class="outline secondary">
            Sign out
          </button>
        </PostForm>
      </footer>
    </Document>,
    options.status ?? 200,
  )
}

/** A page outside the signed-in area (the sign-in page, a refusal before signing in). */
export function plainPage(
  c: DashboardContext,
  title: string,
  content: Child,
  status: ContentfulStatusCode = 200,
) {
  return respond(
    c,
    <Document title={title}>
      <main class="container narrow">
        <h1>{title}</h1>
        {content}
      </main>
    </Document>,
    status,
  )
}

/** What a refused action shows: one line, or a line per problem (a form's fields, a file's lines). */
export interface Refusal {
  message: string
  lines?: string[]
}

export function RefusalNotice(props: { refusal: Refusal }) {
  return (
    <article class="refusal" role="alert">
      <p>{props.refusal.message}</p>
      {props.refusal.lines?.length ? (
        <ul>
          {props.refusal.lines.map((line) => (
            <li>{line}</li>
          ))}
        </ul>
      ) : null}
    </article>
  )
}

/** A form that changes something: POST, with the session's form token. */
export function PostForm(
  props: PropsWithChildren<{
    action: string
    token: string
    class?: string
    enctype?: 'multipart/form-data'
  }>,
) {
  return (
    <form method="post" action={props.action} class={props.class} enctype={props.enctype}>
      <input type="hidden" name="csrf" value={props.token} />
      {props.children}
    </form>
  )
}

/** One button that posts to `action` (enable, resume, revoke, ...). */
export function ActionButton(props: { action: string; token: string; label: string; variant?: string }) {
  return (
    <PostForm action={props.action} token={props.token} class="inline">
      <button type="submit" class={props.variant ?? 'outline'}>
        {props.label}
      </button>
    </PostForm>
  )
}

/** An API timestamp (`YYYY-MM-DD HH:MM:SS`, UTC) as people read it. */
export function When(props: { at: string | null | undefined; empty?: string }) {
  if (!props.at) return <span class="muted">{props.empty ?? '—'}</span>
  return <time datetime={`${props.at.replace(' ', 'T')}Z`}>{`${props.at} UTC`}</time>
}

/** "Newer" and "Older" links of a keyset-paged list. */
export function Pager(props: { newer?: string | undefined; older?: string | undefined }) {
  if (!props.newer && !props.older) return null
  return (
    <nav class="pager" aria-label="Pages">
      <ul>
        <li>{props.newer ? <a href={props.newer}>← Newest</a> : null}</li>
      </ul>
      <ul>
        <li>{props.older ? <a href={props.older}>Older →</a> : null}</li>
      </ul>
    </nav>
  )
}

/**
 * A table that scrolls sideways inside its own box on a narrow screen, its first column (put the
 * one that leads on there) kept in view; `head` names its columns.
 */
export function Table(props: { head: Child[]; children: Child }) {
  return (
    <div class="overflow-auto">
      <table>
        <thead>
          <tr>
            {props.head.map((label) => (
              <th scope="col">{label}</th>
            ))}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  )
}
