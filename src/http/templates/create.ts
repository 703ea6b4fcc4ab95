import { createTemplateRoute } from '../../generated/routes.ts'
import { createTemplate } from '../../templates/templates.ts'
import type { Api } from '../env.ts'
import { boundedBody } from '../json-body.ts'

export function registerCreateTemplate(api: Api) {
  api.openapi(boundedBody(createTemplateRoute), async (c) => {
    const template = await createTemplate(
      c.get('services').sql,
      c.get('caller').accountId,
      c.req.valid('json'),
    )
    return c.json({ success: true as const, template }, 201)
  })
}
