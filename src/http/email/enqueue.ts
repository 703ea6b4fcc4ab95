import { enqueueEmailRoute } from '../../generated/routes.ts'
import { checkRecipientCount, normalizeEmailRequest } from '../../sending/email-request.ts'
import { enqueue } from '../../sending/enqueue.ts'
import { scheduledTime } from '../../sending/scheduling.ts'
import type { Api } from '../env.ts'
import { proOnly } from '../feature-gate.ts'
import { boundedBody } from '../json-body.ts'

export function registerEnqueueEmail(api: Api) {
  api.openapi(
    proOnly('asyncSending', boundedBody(enqueueEmailRoute, { precheck: checkRecipientCount })),
    async (c) => {
      const services = c.get('services')
      const scheduledAt = scheduledTime(c.req.valid('json').scheduled_at, services.clock())
      const request = await normalizeEmailRequest(c.req.valid('json'))
      const result = await enqueue(services, c.get('requestCaller'), request, scheduledAt)
      return c.json(result, 200)
    },
  )
}
