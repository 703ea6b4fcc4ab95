import { createWebhookRoute } from '../../generated/routes.ts'
import { createWebhook } from '../../webhooks/endpoints.ts'
import type { Api } from '../env.ts'
import { boundedBody } from '../json-body.ts'

export function registerCreateWebhook(api: Api) {
  api.openapi(boundedBody(createWebhookRoute), async (c) => {
    const created = await createWebhook(c.get('services'), c.get('caller').accountId, c.req.valid('json'))
    return c.json({ success: true as const, ...created }, 201)
  })
}
