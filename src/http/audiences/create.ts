import { createAudience } from '../../audiences/audiences.ts'
import { createAudienceRoute } from '../../generated/routes.ts'
import type { Api } from '../env.ts'
import { proOnly } from '../feature-gate.ts'
import { boundedBody, SMALL_JSON_BODY_BYTES } from '../json-body.ts'

export function registerCreateAudience(api: Api) {
  api.openapi(
    proOnly('audiences', boundedBody(createAudienceRoute, { maxBytes: SMALL_JSON_BODY_BYTES })),
    async (c) => {
      const audience = await createAudience(
        c.get('services').sql,
        c.get('caller').accountId,
        c.req.valid('json'),
      )
      return c.json({ success: true as const, audience }, 201)
    },
  )
}
