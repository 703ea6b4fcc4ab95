import { sendEmailRoute } from '../../generated/routes.ts'
import { checkRecipientCount, normalizeEmailRequest } from '../../sending/email-request.ts'
import { refuseScheduleOnSend } from '../../sending/scheduling.ts'
import { sendNow } from '../../sending/send-now.ts'
import type { Api } from '../env.ts'
import { boundedBody } from '../json-body.ts'

export function registerSendEmail(api: Api) {
  api.openapi(boundedBody(sendEmailRoute, { precheck: checkRecipientCount }), async (c) => {
    refuseScheduleOnSend(c.req.valid('json'))
    const request = await normalizeEmailRequest(c.req.valid('json'))
    const result = await sendNow(
      c.get('services'),
      c.get('requestCaller'),
      request,
      c.req.header('idempotency-key'),
    )
    return c.json(result, 200)
  })
}
