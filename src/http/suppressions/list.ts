import { listSuppressionsRoute } from '../../generated/routes.ts'
import { listSuppressions } from '../../suppressions/suppressions.ts'
import type { Api } from '../env.ts'

export function registerListSuppressions(api: Api) {
  api.openapi(listSuppressionsRoute, async (c) => {
    const page = await listSuppressions(
      c.get('services').sql,
      c.get('caller').accountId,
      c.req.valid('query'),
    )
    return c.json({ success: true as const, ...page }, 200)
  })
}
