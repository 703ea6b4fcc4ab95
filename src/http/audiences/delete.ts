import { deleteAudience } from '../../audiences/audiences.ts'
import { deleteAudienceRoute } from '../../generated/routes.ts'
import type { Api } from '../env.ts'
import { proOnly } from '../feature-gate.ts'

export function registerDeleteAudience(api: Api) {
  api.openapi(proOnly('audiences', deleteAudienceRoute), async (c) => {
    await deleteAudience(c.get('services').sql, c.get('caller').accountId, c.req.valid('param').id)
    return c.json({ success: true as const, message: 'Audience deleted' }, 200)
  })
}
