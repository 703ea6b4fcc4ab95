import type { Api } from '../env.ts'
import { registerAddAudienceMembers } from './add-members.ts'
import { registerCreateAudience } from './create.ts'
import { registerDeleteAudience } from './delete.ts'
import { registerDeleteAudienceMember } from './delete-member.ts'
import { registerGetAudience } from './get.ts'
import { registerListAudiences } from './list.ts'
import { registerListAudienceMembers } from './list-members.ts'
import { registerUpdateAudience } from './update.ts'

export function registerAudiences(api: Api) {
  registerListAudiences(api)
  registerCreateAudience(api)
  registerGetAudience(api)
  registerUpdateAudience(api)
  registerDeleteAudience(api)
  registerListAudienceMembers(api)
  registerAddAudienceMembers(api)
  registerDeleteAudienceMember(api)
}
