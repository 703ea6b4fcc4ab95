import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { WebhookEventTypeSchema } from '../../src/generated/routes.ts'
import { createWebhook, deleteWebhook } from '../../src/webhooks/endpoints.ts'
import type { Bench, Scenario } from '../support.ts'
import { enqueueRun, QUEUED } from './enqueue.ts'

const ALL_EVENTS = WebhookEventTypeSchema.options

/**
 * The queue's speed with and without a webhook endpoint subscribed to every event (a receiver in
 * this process answering 204): recording an event rides in the statement that settles each
 * message, and delivering it runs beside the sending. Target: within 10% of the figure without.
 */
export const webhooks: Scenario = {
  name: 'webhooks',
  async run(bench: Bench) {
    const without = await enqueueRun(bench, `POST /enqueue ×${QUEUED} → delivered, no webhook`)
    let received = 0
    const receiver = http.createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        received++
        res.writeHead(204).end()
      })
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`
    const { webhook } = await createWebhook(bench.services, bench.accountId, { url, events: [...ALL_EVENTS] })
    try {
      const started = Date.now()
      const withHook = await enqueueRun(bench, `POST /enqueue ×${QUEUED} → delivered, webhook on every event`)
      while (received < QUEUED) await sleep(20)
      const hooksSeconds = (Date.now() - started) / 1000
      const ratio = withHook.count / withHook.seconds / (without.count / without.seconds)
      console.log(
        `Webhooks: sending with an endpoint subscribed to every event runs at ${(ratio * 100).toFixed(1)}% of the ` +
          `speed without (target: at least 90%: ${ratio >= 0.9 ? 'met' : 'MISSED'}); all ${QUEUED} email.sent ` +
          `events were delivered ${hooksSeconds.toFixed(1)} s after the first request.`,
      )
      return [without, withHook]
    } finally {
      await deleteWebhook(bench.services.sql, bench.accountId, webhook.id)
      await new Promise<void>((resolve) => receiver.close(() => resolve()))
    }
  },
}
