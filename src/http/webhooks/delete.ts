import { deleteWebhookRoute } from '../../generated/routes.ts'
import { deleteWebhook } from '../../webhooks/endpoints.ts'
import type { Api } from '../env.ts'

export function registerDeleteWebhook(api: Api) {
  api.openapi(deleteWebhookRoute, async (c) => {
    await deleteWebhook(c.get('services').sql, c.get('caller').accountId, c.req.valid('param').id)
    return c.json({ success: true as const, message: 'Webhook endpoint deleted' }, 200)
  })
}
