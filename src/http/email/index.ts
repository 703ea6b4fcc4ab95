import type { Api } from '../env.ts'
import { registerEnqueueEmail } from './enqueue.ts'
import { registerSendEmail } from './send.ts'

export function registerEmail(api: Api) {
  registerSendEmail(api)
  registerEnqueueEmail(api)
}
