import { listWebhooksRoute } from '../../generated/routes.ts'
import { listWebhooks } from '../../webhooks/endpoints.ts'
import type { Api } from '../env.ts'

export function registerListWebhooks(api: Api) {
  api.openapi(listWebhooksRoute, async (c) => {
    const webhooks = await listWebhooks(c.get('services').sql, c.get('caller').accountId)
    return c.json({ success: true as const, webhooks }, 200)
  })
}
