import { listWebhookDeliveriesRoute } from '../../generated/routes.ts'
import { listDeliveries } from '../../webhooks/endpoints.ts'
import type { Api } from '../env.ts'

export function registerListWebhookDeliveries(api: Api) {
  api.openapi(listWebhookDeliveriesRoute, async (c) => {
    const deliveries = await listDeliveries(
      c.get('services').sql,
      c.get('caller').accountId,
      c.req.valid('param').id,
      c.req.valid('query').limit,
    )
    return c.json({ success: true as const, deliveries }, 200)
  })
}
