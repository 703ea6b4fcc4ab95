import { cancelEmailRoute } from '../../generated/routes.ts'
import { cancelEmail } from '../../sending/changing-course.ts'
import type { Api } from '../env.ts'

export function registerCancelEmail(api: Api) {
  api.openapi(cancelEmailRoute, async (c) => {
    const email = await cancelEmail(c.get('services').sql, c.get('caller').accountId, c.req.valid('param').id)
    return c.json({ success: true as const, email }, 200)
  })
}
