import { createWebhookRoute } from '../../generated/routes.ts'
import { createWebhook } from '../../webhooks/endpoints.ts'
import type { Api } from '../env.ts'
import { boundedBody, SMALL_JSON_BODY_BYTES } from '../json-body.ts'

export function registerCreateWebhook(api: Api) {
  api.openapi(boundedBody(createWebhookRoute, { maxBytes: SMALL_JSON_BODY_BYTES }), async (c) => {
    const created = await createWebhook(c.get('services'), c.get('caller').accountId, c.req.valid('json'))
    return c.json({ success: true as const, ...created }, 201)
  })
}
