import type { Api } from '../env.ts'
import { registerSendEmail } from './send.ts'

export const EMAIL_OPERATIONS = ['sendEmail'] as const

export function registerEmail(api: Api) {
  registerSendEmail(api)
}
