import { listTemplatesRoute } from '../../generated/routes.ts'
import { listTemplates } from '../../templates/templates.ts'
import type { Api } from '../env.ts'

export function registerListTemplates(api: Api) {
  api.openapi(listTemplatesRoute, async (c) => {
    const templates = await listTemplates(c.get('services').sql, c.get('caller').accountId)
    return c.json({ success: true as const, templates }, 200)
  })
}
