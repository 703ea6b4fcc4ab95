import { listMembers } from '../../audiences/audiences.ts'
import { listAudienceMembersRoute } from '../../generated/routes.ts'
import type { Api } from '../env.ts'
import { proOnly } from '../feature-gate.ts'

export function registerListAudienceMembers(api: Api) {
  api.openapi(proOnly('audiences', listAudienceMembersRoute), async (c) => {
    const page = await listMembers(
      c.get('services').sql,
      c.get('caller').accountId,
      c.req.valid('param').id,
      c.req.valid('query'),
    )
    return c.json({ success: true as const, ...page }, 200)
  })
}
