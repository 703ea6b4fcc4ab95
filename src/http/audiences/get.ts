import { getAudience } from '../../audiences/audiences.ts'
import { getAudienceRoute } from '../../generated/routes.ts'
import type { Api } from '../env.ts'
import { proOnly } from '../feature-gate.ts'

export function registerGetAudience(api: Api) {
  api.openapi(proOnly('audiences', getAudienceRoute), async (c) => {
    const audience = await getAudience(
      c.get('services').sql,
      c.get('caller').accountId,
      c.req.valid('param').id,
    )
    return c.json({ success: true as const, audience }, 200)
  })
}
