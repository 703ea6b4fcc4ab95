import { getBatch } from '../../batches/batches.ts'
import { getBatchRoute } from '../../generated/routes.ts'
import type { Api } from '../env.ts'
import { proOnly } from '../feature-gate.ts'

export function registerGetBatch(api: Api) {
  api.openapi(proOnly('batches', getBatchRoute), async (c) => {
    const batch = await getBatch(c.get('services').sql, c.get('caller').accountId, c.req.valid('param').id)
    return c.json({ success: true as const, batch }, 200)
  })
}
