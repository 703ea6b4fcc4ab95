import { listAudiences } from '../../audiences/audiences.ts'
import { listAudiencesRoute } from '../../generated/routes.ts'
import type { Api } from '../env.ts'
import { proOnly } from '../feature-gate.ts'

export function registerListAudiences(api: Api) {
  api.openapi(proOnly('audiences', listAudiencesRoute), async (c) => {
    const audiences = await listAudiences(c.get('services').sql, c.get('caller').accountId)
    return c.json({ success: true as const, audiences }, 200)
  })
}
