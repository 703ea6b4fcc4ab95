import { updateWebhookRoute } from '../../generated/routes.ts'
import { updateWebhook } from '../../webhooks/endpoints.ts'
import type { Api } from '../env.ts'
import { boundedBody, SMALL_JSON_BODY_BYTES } from '../json-body.ts'

export function registerUpdateWebhook(api: Api) {
  api.openapi(boundedBody(updateWebhookRoute, { maxBytes: SMALL_JSON_BODY_BYTES }), async (c) => {
    const webhook = await updateWebhook(
      c.get('services'),
      c.get('caller').accountId,
      c.req.valid('param').id,
      c.req.valid('json'),
    )
    return c.json({ success: true as const, webhook }, 200)
  })
}
