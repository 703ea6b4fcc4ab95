import type { Api } from '../env.ts'
import { registerCreateTemplate } from './create.ts'
import { registerDeleteTemplate } from './delete.ts'
import { registerGetTemplate } from './get.ts'
import { registerListTemplates } from './list.ts'
import { registerUpdateTemplate } from './update.ts'

export function registerTemplates(api: Api) {
  registerListTemplates(api)
  registerCreateTemplate(api)
  registerGetTemplate(api)
  registerUpdateTemplate(api)
  registerDeleteTemplate(api)
}
