import { updateAudience } from '../../audiences/audiences.ts'
import { updateAudienceRoute } from '../../generated/routes.ts'
import type { Api } from '../env.ts'
import { proOnly } from '../feature-gate.ts'
import { boundedBody, SMALL_JSON_BODY_BYTES } from '../json-body.ts'

export function registerUpdateAudience(api: Api) {
  api.openapi(
    proOnly('audiences', boundedBody(updateAudienceRoute, { maxBytes: SMALL_JSON_BODY_BYTES })),
    async (c) => {
      const audience = await updateAudience(
        c.get('services').sql,
        c.get('caller').accountId,
        c.req.valid('param').id,
        c.req.valid('json'),
      )
      return c.json({ success: true as const, audience }, 200)
    },
  )
}
