import { createMiddleware } from 'hono/factory'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { requireFeature } from '../accounts/features.ts'
import {
  type AudienceMember,
  type AudienceWithCount,
  browseMembers,
  createAudience,
  deleteAudience,
  getAudience,
  listAudiences,
  updateAudience,
} from '../audiences/audiences.ts'
import { listConnections } from '../connections/connections.ts'
import { AudienceCreateRequestSchema, AudienceUpdateRequestSchema } from '../generated/routes.ts'
import { enableSignupPage, getSignupPage, setSignupPage } from '../signups/signup-pages.ts'
import { counted } from '../wording.ts'
import { ConfirmLink } from './confirm.tsx'
import type { Dashboard, DashboardContext, DashboardEnv } from './env.ts'
import { ActionButton, Pager, PostForm, page, type Refusal, Table, When } from './layout.tsx'
import { registerMemberDelete } from './member-delete.tsx'
import { AddMembers, registerMemberImport } from './member-import.tsx'
import { storableId } from './params.ts'
import { readPostedFields, validated } from './posted-fields.ts'
import { act } from './refusals.tsx'
import { resource, routes, signedIn } from './resource.ts'
import { SignupPageSection, signupPageSettings } from './signup-page.tsx'

const AUDIENCES = resource('/dashboard/audiences', (c, id) => {
  const { sql, accountId } = signedIn(c)
  return getAudience(sql, accountId, id)
})
const LIST = AUDIENCES.list
const one = AUDIENCES.one

/** Audiences are a Pro feature here as in the API: the Free plan gets the same refusal. */
const proOnly = createMiddleware<DashboardEnv>(async (c, next) => {
  requireFeature(c.get('session'), 'audiences')
  await next()
})

/** Audiences: list, create, edit, delete; members searched and paged, added as text or CSV, deleted. */
export function registerAudiences(app: Dashboard): void {
  app.use(LIST, proOnly)
  app.use(`${LIST}/*`, proOnly)
  const on = routes(app, AUDIENCES)
  on.list((c) => listPage(c, {}))
  on.create(create)
  on.detail((c, audience) => audiencePage(c, audience, {}))
  on.update(update)
  on.action('delete', (c, audience) =>
    act(
      c,
      LIST,
      async () => {
        const { sql, accountId } = signedIn(c)
        await deleteAudience(sql, accountId, audience.id)
        return `Audience “${audience.name}” deleted, with its ${counted(audience.member_count, 'member')}.`
      },
      (refusal, status) => audiencePage(c, audience, { refusal }, status),
    ),
  )
  on.action('signup-page', saveSignupPage)
  for (const [word, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    on.action(`signup-page/${word}`, (c, audience) =>
      actOnSignupPage(c, audience, async () => {
        const { sql, accountId, services } = signedIn(c)
        await enableSignupPage(sql, accountId, audience.id, enabled, services.config.publicUrl)
        return enabled ? 'Sign-up page enabled.' : 'Sign-up page disabled: it answers 404 until enabled.'
      }),
    )
  }
  registerMemberImport(on, audiencePage)
  registerMemberDelete(on)
}

async function create(c: DashboardContext) {
  const form = await readPostedFields(c)
  return act(
    c,
    LIST,
    async () => {
      const content = validated(AudienceCreateRequestSchema, {
        name: form.text('name'),
        description: form.optional('description'),
      })
      const { sql, accountId } = signedIn(c)
      const audience = await createAudience(sql, accountId, content)
      return `Audience “${audience.name}” created.`
    },
    (refusal, status) =>
      listPage(
        c,
        { refusal, values: { name: form.text('name'), description: form.text('description') } },
        status,
      ),
  )
}

async function update(c: DashboardContext, audience: AudienceWithCount) {
  const form = await readPostedFields(c)
  return act(
    c,
    one(audience.id),
    async () => {
      const change = validated(AudienceUpdateRequestSchema, {
        name: form.text('name'),
        description: form.text('description'),
      })
      const { sql, accountId } = signedIn(c)
      await updateAudience(sql, accountId, audience.id, change)
      return 'Audience saved.'
    },
    (refusal, status) => audiencePage(c, audience, { refusal }, status),
  )
}

async function saveSignupPage(c: DashboardContext, audience: AudienceWithCount) {
  const form = await readPostedFields(c)
  return actOnSignupPage(c, audience, async () => {
    const { sql, accountId, services } = signedIn(c)
    const page = await setSignupPage(
      sql,
      accountId,
      audience.id,
      signupPageSettings(form),
      services.config.publicUrl,
    )
    return `Sign-up page saved: ${page.url}`
  })
}

/** An action on the audience's sign-up page, which leads back to that part of its page. */
function actOnSignupPage(c: DashboardContext, audience: AudienceWithCount, work: () => Promise<string>) {
  return act(c, `${one(audience.id)}#signup-page`, work, (refusal, status) =>
    audiencePage(c, audience, { refusal }, status),
  )
}

interface ListState {
  refusal?: Refusal
  values?: { name: string; description: string }
}

async function listPage(c: DashboardContext, state: ListState, status: ContentfulStatusCode = 200) {
  const { sql, accountId } = signedIn(c)
  const audiences = await listAudiences(sql, accountId)
  return page(
    c,
    { title: 'Audiences', section: LIST, refusal: state.refusal, status },
    <>
      {audiences.length === 0 ? (
        <p>No audience yet: a list of recipients, each with values for the placeholders of a batch.</p>
      ) : (
        <Table head={['Audience', 'Members', 'Created']}>
          {audiences.map((a) => (
            <tr>
              <td class="wrap">
                <a href={one(a.id)}>{a.name}</a>
                {a.description ? <small class="muted block">{a.description}</small> : null}
              </td>
              <td>{a.member_count}</td>
              <td class="nowrap">
                <When at={a.created_at} />
              </td>
            </tr>
          ))}
        </Table>
      )}
      <details open={audiences.length === 0 || state.values !== undefined}>
        <summary>Create an audience</summary>
        <PostForm action={LIST} token={c.get('formToken')}>
          <AudienceFields name={state.values?.name ?? ''} description={state.values?.description ?? ''} />
          <button type="submit">Create</button>
        </PostForm>
      </details>
    </>,
  )
}

function AudienceFields(props: { name: string; description: string }) {
  return (
    <>
      <label>
        Name
        <input name="name" required maxlength={255} value={props.name} />
      </label>
      <label>
        Description <small class="muted">(optional, at most 1000 characters)</small>
        <textarea name="description" maxlength={1000} rows={2}>
          {props.description}
        </textarea>
      </label>
    </>
  )
}

interface AudienceState {
  refusal?: Refusal
  /** Lines to show again in the members box. */
  lines?: string | undefined
}

/** The members' search and page cursor, from the address. */
function memberQuery(c: DashboardContext) {
  const search = c.req.query('q')?.trim().slice(0, 254) || undefined
  const after = storableId(c.req.query('after'))
  return { search: search?.includes('\u0000') ? undefined : search, after }
}

type MemberQuery = ReturnType<typeof memberQuery>

async function audiencePage(
  c: DashboardContext,
  audience: AudienceWithCount,
  state: AudienceState,
  status: ContentfulStatusCode = 200,
) {
  const query = memberQuery(c)
  const { sql, accountId, services } = signedIn(c)
  const found = await browseMembers(sql, accountId, audience.id, query)
  const token = c.get('formToken')
  const [signupPage, connections] = await Promise.all([
    // A batch's temporary audience has no page of its own.
    audience.temporary ? undefined : getSignupPage(sql, accountId, audience.id, services.config.publicUrl),
    listConnections(sql, accountId),
  ])
  return page(
    c,
    { title: audience.name, section: LIST, refusal: state.refusal, status },
    <>
      <p>
        <a href={LIST}>← Audiences</a>
      </p>
      {audience.description ? <p class="wrap">{audience.description}</p> : null}
      <Members audience={audience} query={query} members={found.members} more={found.more} />
      <AddMembers action={`${one(audience.id)}/members`} token={token} lines={state.lines} />
      {audience.temporary ? null : (
        <SignupPageSection
          action={`${one(audience.id)}/signup-page`}
          token={token}
          page={signupPage}
          connections={connections}
        />
      )}
      <Settings audience={audience} token={token} />
    </>,
  )
}

/** The members found, searched by address and paged. */
function Members(props: {
  audience: AudienceWithCount
  query: MemberQuery
  members: AudienceMember[]
  more: number | undefined
}) {
  const { audience, query, members, more } = props
  const base = (extra: Record<string, string>) => {
    const params = new URLSearchParams({ ...(query.search ? { q: query.search } : {}), ...extra })
    return params.size ? `${one(audience.id)}?${params}` : one(audience.id)
  }
  return (
    <section>
      <h2>Members ({audience.member_count})</h2>
      <form method="get" action={one(audience.id)} class="search">
        <input
          type="search"
          name="q"
          value={query.search}
          placeholder="Search by address"
          aria-label="Search"
        />
        <button type="submit" class="outline">
          Search
        </button>
      </form>
      {members.length === 0 ? (
        <p class="muted">{query.search ? 'No member matches.' : 'No member yet.'}</p>
      ) : (
        <MemberTable audienceId={audience.id} members={members} />
      )}
      <Pager
        newer={query.after !== undefined ? base({}) : undefined}
        older={more !== undefined ? base({ after: String(more) }) : undefined}
      />
    </section>
  )
}

function Settings(props: { audience: AudienceWithCount; token: string }) {
  const { audience, token } = props
  return (
    <section>
      <h2>Settings</h2>
      <PostForm action={one(audience.id)} token={token}>
        <AudienceFields name={audience.name} description={audience.description ?? ''} />
        <button type="submit">Save</button>
      </PostForm>
      <details>
        <summary>Delete the audience…</summary>
        <p>
          Its {counted(audience.member_count, 'member')} {audience.member_count === 1 ? 'goes' : 'go'} with
          it. Batches already sent to it are not affected.
        </p>
        <ActionButton
          action={`${one(audience.id)}/delete`}
          token={token}
          label="Delete the audience"
          variant="contrast"
        />
      </details>
    </section>
  )
}

function payloadText(member: AudienceMember): string {
  if (!member.payload) return ''
  return Object.entries(member.payload)
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(', ')
}

function MemberTable(props: { audienceId: number; members: AudienceMember[] }) {
  return (
    <Table head={['Address', 'Values', 'Added', <span class="visually-hidden">Actions</span>]}>
      {props.members.map((m) => (
        <tr>
          <td class="wrap words">{m.email}</td>
          <td class="wrap">
            <small>{payloadText(m)}</small>
          </td>
          <td class="nowrap">
            <When at={m.created_at} />
          </td>
          <td>
            <ConfirmLink href={`${one(props.audienceId)}/members/${m.id}/delete`} label="Delete" />
          </td>
        </tr>
      ))}
    </Table>
  )
}
