import { updateTemplateRoute } from '../../generated/routes.ts'
import { updateTemplate } from '../../templates/templates.ts'
import type { Api } from '../env.ts'
import { boundedBody } from '../json-body.ts'

export function registerUpdateTemplate(api: Api) {
  api.openapi(boundedBody(updateTemplateRoute), async (c) => {
    const template = await updateTemplate(
      c.get('services').sql,
      c.get('caller').accountId,
      c.req.valid('param').id,
      c.req.valid('json'),
    )
    return c.json({ success: true as const, template }, 200)
  })
}
