import type { Api } from '../env.ts'
import { registerCancelEmail } from './cancel.ts'
import { registerEnqueueEmail } from './enqueue.ts'
import { registerGetEmail } from './get.ts'
import { registerListEmails } from './list.ts'
import { registerSendEmail } from './send.ts'
import { registerUpdateEmail } from './update.ts'

export function registerEmail(api: Api) {
  registerSendEmail(api)
  registerEnqueueEmail(api)
  registerListEmails(api)
  registerGetEmail(api)
  registerUpdateEmail(api)
  registerCancelEmail(api)
}
