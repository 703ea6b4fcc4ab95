import { rotateWebhookSecretRoute } from '../../generated/routes.ts'
import { rotateWebhookSecret } from '../../webhooks/endpoints.ts'
import type { Api } from '../env.ts'

export function registerRotateWebhookSecret(api: Api) {
  api.openapi(rotateWebhookSecretRoute, async (c) => {
    const rotated = await rotateWebhookSecret(
      c.get('services'),
      c.get('caller').accountId,
      c.req.valid('param').id,
    )
    return c.json({ success: true as const, ...rotated }, 200)
  })
}
