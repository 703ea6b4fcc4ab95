import { cancelBatch } from '../../batches/batches.ts'
import { cancelBatchRoute } from '../../generated/routes.ts'
import type { Api } from '../env.ts'
import { proOnly } from '../feature-gate.ts'

export function registerCancelBatch(api: Api) {
  api.openapi(proOnly('batches', cancelBatchRoute), async (c) => {
    const batch = await cancelBatch(c.get('services').sql, c.get('caller').accountId, c.req.valid('param').id)
    return c.json({ success: true as const, batch }, 200)
  })
}
