import { getTemplateRoute } from '../../generated/routes.ts'
import { getTemplate } from '../../templates/templates.ts'
import type { Api } from '../env.ts'

export function registerGetTemplate(api: Api) {
  api.openapi(getTemplateRoute, async (c) => {
    const template = await getTemplate(
      c.get('services').sql,
      c.get('caller').accountId,
      c.req.valid('param').id,
    )
    return c.json({ success: true as const, template }, 200)
  })
}
