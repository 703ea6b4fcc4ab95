import type { Api } from '../env.ts'
import { registerCreateSuppressions } from './create.ts'
import { registerDeleteSuppression } from './delete.ts'
import { registerGetSuppression } from './get.ts'
import { registerListSuppressions } from './list.ts'

export function registerSuppressions(api: Api) {
  registerListSuppressions(api)
  registerCreateSuppressions(api)
  registerGetSuppression(api)
  registerDeleteSuppression(api)
}
