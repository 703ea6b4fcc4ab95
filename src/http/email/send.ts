import { sendEmailRoute } from '../../generated/routes.ts'
import { MAX_RECIPIENTS_PER_SEND, normalizeEmailRequest } from '../../sending/email-request.ts'
import { sendNow } from '../../sending/send-now.ts'
import type { Api } from '../env.ts'

export function registerSendEmail(api: Api) {
  api.openapi(sendEmailRoute, async (c) => {
    const request = normalizeEmailRequest(c.req.valid('json'), MAX_RECIPIENTS_PER_SEND)
    const result = await sendNow(c.get('services'), c.get('caller'), request, c.req.header('idempotency-key'))
    return c.json(result, 200)
  })
}
