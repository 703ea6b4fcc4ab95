import { deleteTemplateRoute } from '../../generated/routes.ts'
import { deleteTemplate } from '../../templates/templates.ts'
import type { Api } from '../env.ts'

export function registerDeleteTemplate(api: Api) {
  api.openapi(deleteTemplateRoute, async (c) => {
    await deleteTemplate(c.get('services').sql, c.get('caller').accountId, c.req.valid('param').id)
    return c.json({ success: true as const, message: 'Template deleted' }, 200)
  })
}
