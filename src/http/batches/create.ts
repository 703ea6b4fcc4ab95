import { checkBatchCounts } from '../../batches/batch-request.ts'
import { createBatch } from '../../batches/batches.ts'
import { createBatchRoute } from '../../generated/routes.ts'
import type { Api } from '../env.ts'
import { proOnly } from '../feature-gate.ts'
import { boundedBody } from '../json-body.ts'

export function registerCreateBatch(api: Api) {
  api.openapi(
    proOnly('batches', boundedBody(createBatchRoute, { precheck: checkBatchCounts })),
    async (c) => {
      const services = c.get('services')
      const created = await createBatch(services.sql, c.get('caller'), c.req.valid('json'), services.clock())
      return c.json(created, 200)
    },
  )
}
