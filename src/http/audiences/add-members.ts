import { addMembers } from '../../audiences/audiences.ts'
import { addAudienceMembersRoute } from '../../generated/routes.ts'
import { counted } from '../../wording.ts'
import type { Api } from '../env.ts'
import { proOnly } from '../feature-gate.ts'
import { boundedBody } from '../json-body.ts'

export function registerAddAudienceMembers(api: Api) {
  api.openapi(proOnly('audiences', boundedBody(addAudienceMembersRoute)), async (c) => {
    const { inserted, duplicates } = await addMembers(
      c.get('services').sql,
      c.get('caller').accountId,
      c.req.valid('param').id,
      c.req.valid('json').members,
    )
    const message = `${counted(inserted, 'member')} added, ${counted(duplicates, 'duplicate')} skipped`
    return c.json({ success: true as const, inserted, duplicates, message }, 201)
  })
}
