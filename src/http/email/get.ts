import { getEmailRoute } from '../../generated/routes.ts'
import { emailById } from '../../sending/emails.ts'
import type { Api } from '../env.ts'

export function registerGetEmail(api: Api) {
  api.openapi(getEmailRoute, async (c) => {
    const email = await emailById(c.get('services').sql, c.get('caller').accountId, c.req.valid('param').id)
    return c.json({ success: true as const, email }, 200)
  })
}
