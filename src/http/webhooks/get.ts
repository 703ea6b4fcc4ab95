import { getWebhookRoute } from '../../generated/routes.ts'
import { getWebhook } from '../../webhooks/endpoints.ts'
import type { Api } from '../env.ts'

export function registerGetWebhook(api: Api) {
  api.openapi(getWebhookRoute, async (c) => {
    const webhook = await getWebhook(
      c.get('services').sql,
      c.get('caller').accountId,
      c.req.valid('param').id,
    )
    return c.json({ success: true as const, webhook }, 200)
  })
}
