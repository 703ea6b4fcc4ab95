import { listEmailsRoute } from '../../generated/routes.ts'
import { listEmails } from '../../sending/emails.ts'
import type { Api } from '../env.ts'

export function registerListEmails(api: Api) {
  api.openapi(listEmailsRoute, async (c) => {
    const page = await listEmails(c.get('services').sql, c.get('caller').accountId, c.req.valid('query'))
    return c.json({ success: true as const, ...page }, 200)
  })
}
