import { deleteBatch } from '../../batches/batches.ts'
import { deleteBatchRoute } from '../../generated/routes.ts'
import type { Api } from '../env.ts'
import { proOnly } from '../feature-gate.ts'

export function registerDeleteBatch(api: Api) {
  api.openapi(proOnly('batches', deleteBatchRoute), async (c) => {
    await deleteBatch(c.get('services').sql, c.get('caller').accountId, c.req.valid('param').id)
    return c.json({ success: true as const, message: 'Batch deleted' }, 200)
  })
}
