import { deleteSuppressionRoute } from '../../generated/routes.ts'
import { removeSuppression } from '../../suppressions/suppressions.ts'
import type { Api } from '../env.ts'

export function registerDeleteSuppression(api: Api) {
  api.openapi(deleteSuppressionRoute, async (c) => {
    await removeSuppression(c.get('services').sql, c.get('caller').accountId, c.req.valid('param').email)
    return c.json({ success: true as const, message: 'Suppression removed' }, 200)
  })
}
