import { updateEmailRoute } from '../../generated/routes.ts'
import { rescheduleEmail } from '../../sending/changing-course.ts'
import { scheduledTime } from '../../sending/scheduling.ts'
import type { Api } from '../env.ts'
import { boundedBody, SMALL_JSON_BODY_BYTES } from '../json-body.ts'

export function registerUpdateEmail(api: Api) {
  api.openapi(boundedBody(updateEmailRoute, { maxBytes: SMALL_JSON_BODY_BYTES }), async (c) => {
    const services = c.get('services')
    const at = scheduledTime(c.req.valid('json').scheduled_at, services.clock()) as Date
    const email = await rescheduleEmail(services.sql, c.get('caller').accountId, c.req.valid('param').id, at)
    return c.json({ success: true as const, email }, 200)
  })
}
