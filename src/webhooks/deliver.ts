import type { Config } from '../config.ts'
import { scheduleWebhookRun } from '../db/jobs.ts'
import type { Sql } from '../db/sql.ts'
import {
  BATCH_CONTENT_KEY,
  type BatchContentRef,
  type ClaimedDelivery,
  claimDeliveries,
  nextDeliveryDueInMs,
  settleDelivery,
} from '../db/webhooks.ts'
import type { Logger } from '../log.ts'
import { postWebhook } from '../net/webhook-post.ts'
import { BatchContents } from '../queue/batch-contents.ts'
import type { Claimant } from '../queue/liveness.ts'
import { openPassword } from '../smtp/secret-box.ts'
import { signWebhook } from './signature.ts'

/** How the worker delivers webhooks. */
export interface WebhookPolicy {
  /** The whole exchange with an endpoint, per attempt. */
  timeoutMs: number
  /** Waits after the 1st, 2nd, ... failed attempt; after the last, the delivery fails. */
  retryDelaysMs: number[]
  /** An endpoint whose every attempt failed for this long is disabled. */
  disableAfterMs: number
  /** Deliveries of one endpoint in flight at once. */
  lanes: number
}

const SECOND = 1000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE

/**
 * Standard Webhooks' schedule (Svix's): the first attempt at once, then after 5 s, 5 min,
 * 30 min, 2 h, 5 h, 10 h and 10 h: eight attempts over about 27 hours.
 */
export const DEFAULT_WEBHOOK_POLICY: WebhookPolicy = {
  timeoutMs: 10 * SECOND,
  retryDelaysMs: [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR],
  disableAfterMs: 5 * 24 * HOUR,
  lanes: 4,
}

export interface WebhookDeliveryDeps {
  sql: Sql
  secret: string
  log: Logger
  config: Pick<Config, 'allowPrivateWebhookUrls'>
}

/**
 * Sends the endpoint's due deliveries, `lanes` at a time, until none is due, then asks for a run
 * when the next one is. Each attempt is recorded as it ends; one cut short by the process dying
 * is sent again (same webhook-id) once the process is found dead.
 */
export async function deliverWebhooks(
  deps: WebhookDeliveryDeps,
  endpointId: number,
  claimant: Claimant,
  policy: WebhookPolicy,
  stopping: AbortSignal,
): Promise<void> {
  const contents = new BatchContents()
  while (!stopping.aborted) {
    const claimed = await claimDeliveries(deps.sql, endpointId, claimant.id, policy.lanes)
    if (claimed.length === 0) break
    for (const delivery of claimed) claimant.deliveries.hold(delivery.id)
    await Promise.all(
      claimed.map((delivery) =>
        attempt(deps, endpointId, delivery, policy, contents).finally(() =>
          claimant.deliveries.letGo(delivery.id),
        ),
      ),
    )
  }
  const dueInMs = await nextDeliveryDueInMs(deps.sql, endpointId)
  if (dueInMs !== null) await scheduleWebhookRun(deps.sql, endpointId, dueInMs)
}

/**
 * The body of a delivery, built the same way on every attempt from what was stored, so every
 * retry carries the same body. A batch recipient's email event gets its subject rendered from
 * the batch's content, as its message was.
 */
async function eventBody(sql: Sql, delivery: ClaimedDelivery, contents: BatchContents): Promise<string> {
  const { [BATCH_CONTENT_KEY]: content, ...data } = delivery.data as Record<string, unknown>
  if (content) {
    const { id, payload } = content as BatchContentRef
    data.subject = (await contents.render(sql, id, payload)).subject
  }
  return JSON.stringify({ type: delivery.type, timestamp: delivery.timestamp, data })
}

async function attempt(
  deps: WebhookDeliveryDeps,
  endpointId: number,
  delivery: ClaimedDelivery,
  policy: WebhookPolicy,
  contents: BatchContents,
): Promise<void> {
  const body = await eventBody(deps.sql, delivery, contents)
  const timestamp = Math.floor(Date.now() / 1000)
  const secret = openPassword(deps.secret, delivery.secret_sealed)
  const outcome = await postWebhook(
    delivery.url,
    body,
    {
      'user-agent': 'Mailroom-Webhooks/1.0',
      'webhook-id': delivery.public_id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signWebhook(secret, delivery.public_id, timestamp, body),
    },
    { timeoutMs: policy.timeoutMs, allowPrivate: deps.config.allowPrivateWebhookUrls },
  )
  const ok = outcome.status !== null && outcome.status >= 200 && outcome.status < 300
  const error = ok ? null : (outcome.error ?? `The endpoint answered HTTP ${outcome.status}`)
  const retryInMs = ok ? null : (policy.retryDelaysMs[delivery.attempts - 1] ?? null)
  const disabled = await settleDelivery(
    deps.sql,
    delivery.id,
    { responseStatus: outcome.status, error, retryInMs },
    policy.disableAfterMs,
  )
  const where = {
    endpointId,
    deliveryId: delivery.id,
    eventId: delivery.public_id,
    attempt: delivery.attempts,
  }
  if (error !== null)
    deps.log.info({ ...where, status: outcome.status, error, retryInMs }, 'webhook delivery failed')
  if (disabled) deps.log.warn({ endpointId }, 'webhook endpoint disabled: its deliveries kept failing')
}
