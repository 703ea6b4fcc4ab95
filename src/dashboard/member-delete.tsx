import {
  type AudienceMember,
  type AudienceWithCount,
  deleteMember,
  getAudience,
  getMember,
} from '../audiences/audiences.ts'
import { type Confirmation, confirmPage } from './confirm.tsx'
import type { Dashboard, DashboardContext } from './env.ts'
import { act } from './errors.tsx'
import { idParam } from './params.ts'

const LIST = '/dashboard/audiences'
const MEMBER = `${LIST}/:id{[0-9]+}/members/:member{[0-9]+}/delete`

/** Deleting an audience's member: a confirmation page, then the action it posts. */
export function registerMemberDelete(app: Dashboard): void {
  app.get(MEMBER, async (c) => confirmation(c, ...(await own(c))))

  app.post(MEMBER, async (c) => {
    const [audience, member] = await own(c)
    return act(
      c,
      `${LIST}/${audience.id}`,
      async () => {
        await deleteMember(c.get('services').sql, c.get('session').accountId, audience.id, member.id)
        return `${member.email} deleted from “${audience.name}”.`
      },
      (refusal, status) => confirmation(c, audience, member, { refusal, status }),
    )
  })
}

async function own(c: DashboardContext): Promise<[AudienceWithCount, AudienceMember]> {
  const { sql } = c.get('services')
  const { accountId } = c.get('session')
  const audience = await getAudience(sql, accountId, idParam(c))
  return [audience, await getMember(sql, accountId, audience.id, idParam(c, 'member'))]
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
