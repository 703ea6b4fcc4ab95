import type { Api } from '../env.ts'
import { featureGate } from '../feature-gate.ts'
import { registerEnqueueEmail } from './enqueue.ts'
import { registerSendEmail } from './send.ts'

export const EMAIL_OPERATIONS = ['sendEmail', 'enqueueEmail'] as const

export function registerEmail(api: Api) {
  registerSendEmail(api)
  api.use('/enqueue', featureGate('asyncSending'))
  registerEnqueueEmail(api)
}
