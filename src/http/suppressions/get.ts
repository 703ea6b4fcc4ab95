import { getSuppressionRoute } from '../../generated/routes.ts'
import { getSuppression } from '../../suppressions/suppressions.ts'
import type { Api } from '../env.ts'

export function registerGetSuppression(api: Api) {
  api.openapi(getSuppressionRoute, async (c) => {
    const suppression = await getSuppression(
      c.get('services').sql,
      c.get('caller').accountId,
      c.req.valid('param').email,
    )
    return c.json({ success: true as const, suppression }, 200)
  })
}
