import { enqueueEmailRoute } from '../../generated/routes.ts'
import { MAX_RECIPIENTS_PER_SEND, normalizeEmailRequest } from '../../sending/email-request.ts'
import { enqueue } from '../../sending/enqueue.ts'
import type { Api } from '../env.ts'
import { proOnly } from '../feature-gate.ts'

export function registerEnqueueEmail(api: Api) {
  api.openapi(proOnly('asyncSending', enqueueEmailRoute), async (c) => {
    const request = normalizeEmailRequest(c.req.valid('json'), MAX_RECIPIENTS_PER_SEND)
    const result = await enqueue(c.get('services').sql, c.get('caller'), request)
    return c.json(result, 200)
  })
}
