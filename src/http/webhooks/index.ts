import type { Api } from '../env.ts'
import { registerCreateWebhook } from './create.ts'
import { registerDeleteWebhook } from './delete.ts'
import { registerListWebhookDeliveries } from './deliveries.ts'
import { registerGetWebhook } from './get.ts'
import { registerListWebhooks } from './list.ts'
import { registerRotateWebhookSecret } from './rotate-secret.ts'
import { registerUpdateWebhook } from './update.ts'

export function registerWebhooks(api: Api) {
  registerListWebhooks(api)
  registerCreateWebhook(api)
  registerGetWebhook(api)
  registerUpdateWebhook(api)
  registerDeleteWebhook(api)
  registerRotateWebhookSecret(api)
  registerListWebhookDeliveries(api)
}
