import type { Api } from '../env.ts'
import { registerCancelBatch } from './cancel.ts'
import { registerCreateBatch } from './create.ts'
import { registerDeleteBatch } from './delete.ts'
import { registerGetBatch } from './get.ts'

export function registerBatches(api: Api) {
  registerCreateBatch(api)
  registerGetBatch(api)
  registerDeleteBatch(api)
  registerCancelBatch(api)
}
