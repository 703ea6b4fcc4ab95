import { getSuppression, removeSuppression, type Suppression } from '../suppressions/suppressions.ts'
import { type Confirmation, confirmPage } from './confirm.tsx'
import type { Dashboard, DashboardContext } from './env.ts'
import { act } from './refusals.tsx'
import { signedIn } from './resource.ts'
import { SUPPRESSIONS } from './suppression-forms.tsx'

const REMOVE = `${SUPPRESSIONS}/remove`

/**
 * The confirmation page of removing an address, and the action it posts to. The address is in
 * the query string: any character an address may hold (`/`, `%`, `?`) comes through it as typed.
 */
export function removeAddress(email: string): string {
  return `${REMOVE}?${new URLSearchParams({ email })}`
}

/** Removing an address from the list: a confirmation page, then the action it posts. */
export function registerSuppressionRemove(app: Dashboard): void {
  app.get(REMOVE, async (c) => confirmation(c, await entry(c)))
  app.post(REMOVE, async (c) => {
    const found = await entry(c)
    return act(
      c,
      SUPPRESSIONS,
      async () => {
        const { sql, accountId } = signedIn(c)
        await removeSuppression(sql, accountId, found.email)
        return `${found.email} removed from the suppression list: mail goes to it again.`
      },
      (refusal, status) => confirmation(c, found, { refusal, status }),
    )
  })
}

/** The account's entry for the address the query names; not found (404) when there is none. */
function entry(c: DashboardContext): Promise<Suppression> {
  const { sql, accountId } = signedIn(c)
  return getSuppression(sql, accountId, c.req.query('email') ?? '')
}

function confirmation(
  c: DashboardContext,
  entry: Suppression,
  refused: Pick<Confirmation, 'refusal' | 'status'> = {},
) {
  return confirmPage(c, {
    title: `Remove ${entry.email} from the suppression list?`,
    section: SUPPRESSIONS,
    consequences: (
      <p class="wrap words">
        It is suppressed as <code>{entry.reason}</code> (scope <code>{entry.scope}</code>)
        {entry.detail ? `: ${entry.detail}` : '.'} Once removed, mail goes to it again; a server that says
        again that the mailbox does not exist, or a new complaint, suppresses it again.
      </p>
    ),
    action: removeAddress(entry.email),
    label: 'Remove it from the list',
    back: SUPPRESSIONS,
    keep: 'Keep it suppressed',
    ...refused,
  })
}
