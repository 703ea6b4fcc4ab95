import { deleteMember } from '../../audiences/audiences.ts'
import { deleteAudienceMemberRoute } from '../../generated/routes.ts'
import type { Api } from '../env.ts'
import { proOnly } from '../feature-gate.ts'

export function registerDeleteAudienceMember(api: Api) {
  api.openapi(proOnly('audiences', deleteAudienceMemberRoute), async (c) => {
    const { id, memberId } = c.req.valid('param')
    await deleteMember(c.get('services').sql, c.get('caller').accountId, id, memberId)
    return c.json({ success: true as const, message: 'Member removed' }, 200)
  })
}
