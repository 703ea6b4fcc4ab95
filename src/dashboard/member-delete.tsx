import {
  type AudienceMember,
  type AudienceWithCount,
  deleteMember,
  getMember,
} from '../audiences/audiences.ts'
import { type Confirmation, confirmPage } from './confirm.tsx'
import type { DashboardContext } from './env.ts'
import { idParam } from './params.ts'
import { act } from './refusals.tsx'
import { type Routes, signedIn } from './resource.ts'

const LIST = '/dashboard/audiences'
const MEMBER = 'members/:member{[0-9]+}/delete'

/** Deleting an audience's member: a confirmation page, then the action it posts. */
export function registerMemberDelete(on: Routes<AudienceWithCount>): void {
  on.view(MEMBER, async (c, audience) => confirmation(c, audience, await member(c, audience)))

  on.action(MEMBER, async (c, audience) => {
    const found = await member(c, audience)
    return act(
      c,
      `${LIST}/${audience.id}`,
      async () => {
        const { sql, accountId } = signedIn(c)
        await deleteMember(sql, accountId, audience.id, found.id)
        return `${found.email} deleted from “${audience.name}”.`
      },
      (refusal, status) => confirmation(c, audience, found, { refusal, status }),
    )
  })
}

function member(c: DashboardContext, audience: AudienceWithCount): Promise<AudienceMember> {
  const { sql, accountId } = signedIn(c)
  return getMember(sql, accountId, audience.id, idParam(c, 'member'))
}

function confirmation(
  c: DashboardContext,
  audience: AudienceWithCount,
  member: AudienceMember,
  refused: Pick<Confirmation, 'refusal' | 'status'> = {},
) {
  const back = `${LIST}/${audience.id}`
  return confirmPage(c, {
    title: `Delete ${member.email} from “${audience.name}”?`,
    section: LIST,
    consequences: (
      <p>
        Batches sent to the audience from now on leave this address out, and its values go with it. Adding it
        again starts it afresh.
      </p>
    ),
    action: `${back}/members/${member.id}/delete`,
    label: 'Delete the member',
    back,
    ...refused,
  })
}
