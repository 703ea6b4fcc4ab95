import { createSuppressionsRoute } from '../../generated/routes.ts'
import { suppressManually } from '../../suppressions/suppressions.ts'
import type { Api } from '../env.ts'
import { boundedBody } from '../json-body.ts'

export function registerCreateSuppressions(api: Api) {
  api.openapi(boundedBody(createSuppressionsRoute), async (c) => {
    const counts = await suppressManually(
      c.get('services').sql,
      c.get('caller').accountId,
      c.req.valid('json'),
      'api',
    )
    return c.json({ success: true as const, ...counts }, 201)
  })
}
