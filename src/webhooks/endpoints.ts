import type { z } from 'zod'
import { lockAccount } from '../accounts/accounts.ts'
import { AppError } from '../app-error.ts'
import type { Config } from '../config.ts'
import { isStorableId } from '../db/ids.ts'
import { scheduleWebhookRun } from '../db/jobs.ts'
import type { Db, Sql } from '../db/sql.ts'
import {
  countEndpoints,
  type DeliveryView,
  deleteEndpointRow,
  deliveriesOf,
  type EndpointRow,
  endpointById,
  endpointsOf,
  insertEndpoint,
  redeliver,
  setEndpointSecret,
  updateEndpointRow,
} from '../db/webhooks.ts'
import type { WebhookEventTypeSchema } from '../generated/routes.ts'
import { HostAddressError, resolvePublicHost } from '../net/public-address.ts'
import { WEBHOOK_HOST } from '../net/webhook-post.ts'
import { sealPassword } from '../smtp/secret-box.ts'
import { newSigningSecret } from './signature.ts'

export type WebhookEventType = z.infer<typeof WebhookEventTypeSchema>
export type Webhook = Omit<EndpointRow, 'events'> & { events: WebhookEventType[] }
export type WebhookDelivery = DeliveryView & { type: WebhookEventType }

/** Endpoints an account may keep: each event is delivered to every one, on the send path too. */
export const MAX_ENDPOINTS = 10

/** What the endpoint functions need. */
export interface WebhookDeps {
  sql: Sql
  /** MAILROOM_SECRET: the signing secrets are sealed with it. */
  secret: string
  config: Pick<Config, 'allowPrivateWebhookUrls'>
}

export interface WebhookInput {
  url: string
  events: WebhookEventType[]
  description?: string | undefined
}

export interface WebhookChanges {
  url?: string | undefined
  events?: WebhookEventType[] | undefined
  description?: string | undefined
  enabled?: boolean | undefined
}

/** A new endpoint or secret: the secret is shown this once. */
export interface WithSecret {
  webhook: Webhook
  secret: string
}

const DISABLED_BY_OWNER = 'Disabled by its owner'

export function listWebhooks(db: Db, accountId: number): Promise<Webhook[]> {
  return endpointsOf(db, accountId) as Promise<Webhook[]>
}

export async function getWebhook(db: Db, accountId: number, id: number): Promise<Webhook> {
  const row = isStorableId(id) ? await endpointById(db, accountId, id) : undefined
  if (!row) throw notFound(id)
  return row as Webhook
}

/** Registers an endpoint after checking its URL; refused past MAX_ENDPOINTS. */
export async function createWebhook(
  deps: WebhookDeps,
  accountId: number,
  input: WebhookInput,
): Promise<WithSecret> {
  const url = await checkedUrl(input.url, deps.config.allowPrivateWebhookUrls)
  const secret = newSigningSecret()
  const webhook = await deps.sql.begin(async (tx) => {
    await lockAccount(tx, accountId)
    const used = await countEndpoints(tx, accountId)
    if (used >= MAX_ENDPOINTS) {
      throw new AppError(
        'WEBHOOK_LIMIT_REACHED',
        `An account keeps at most ${MAX_ENDPOINTS} webhook endpoints`,
        {
          details: { limit: MAX_ENDPOINTS, used },
        },
      )
    }
    return insertEndpoint(tx, accountId, {
      url,
      description: input.description ?? null,
      events: unique(input.events),
      secretSealed: sealPassword(deps.secret, secret),
    })
  })
  return { webhook: webhook as Webhook, secret }
}

/** Changes an endpoint; enabling it sends the deliveries waiting for it. */
export async function updateWebhook(
  deps: WebhookDeps,
  accountId: number,
  id: number,
  changes: WebhookChanges,
): Promise<Webhook> {
  await getWebhook(deps.sql, accountId, id)
  const url =
    changes.url === undefined ? undefined : await checkedUrl(changes.url, deps.config.allowPrivateWebhookUrls)
  const row = await updateEndpointRow(
    deps.sql,
    accountId,
    id,
    { ...changes, url, events: changes.events && unique(changes.events) },
    DISABLED_BY_OWNER,
  )
  if (!row) throw notFound(id)
  if (changes.enabled) await scheduleWebhookRun(deps.sql, id)
  return row as Webhook
}

export async function deleteWebhook(db: Db, accountId: number, id: number): Promise<void> {
  if (!isStorableId(id) || !(await deleteEndpointRow(db, accountId, id))) throw notFound(id)
}

/** A new signing secret for the endpoint; deliveries from now on are signed with it. */
export async function rotateWebhookSecret(
  deps: WebhookDeps,
  accountId: number,
  id: number,
): Promise<WithSecret> {
  const secret = newSigningSecret()
  if (
    !isStorableId(id) ||
    !(await setEndpointSecret(deps.sql, accountId, id, sealPassword(deps.secret, secret)))
  ) {
    throw notFound(id)
  }
  return { webhook: await getWebhook(deps.sql, accountId, id), secret }
}

/** The endpoint's latest deliveries, newest first. */
export async function listDeliveries(
  db: Db,
  accountId: number,
  id: number,
  limit: number,
): Promise<WebhookDelivery[]> {
  await getWebhook(db, accountId, id)
  return (await deliveriesOf(db, id, limit)) as WebhookDelivery[]
}

/** Sends a delivery's event to the endpoint again, with the same webhook-id. */
export async function sendAgain(db: Db, accountId: number, id: number, deliveryId: number): Promise<void> {
  await getWebhook(db, accountId, id)
  if (!isStorableId(deliveryId) || (await redeliver(db, id, deliveryId)) === undefined) {
    throw new AppError('WEBHOOK_NOT_FOUND', `Delivery ${deliveryId} of webhook endpoint ${id} not found`)
  }
}

/**
 * The URL as given, when it is http(s) and its host resolves to public addresses only (or private
 * ones are allowed). The worker checks again on every attempt: DNS can change.
 */
async function checkedUrl(text: string, allowPrivate: boolean): Promise<string> {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new AppError('INVALID_WEBHOOK_URL', 'The webhook URL is not a valid URL')
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new AppError('INVALID_WEBHOOK_URL', 'A webhook URL starts with https:// or http://')
  }
  try {
    await resolvePublicHost(url.hostname, allowPrivate, WEBHOOK_HOST)
  } catch (error) {
    if (error instanceof HostAddressError) throw new AppError('INVALID_WEBHOOK_URL', error.message)
    throw error
  }
  return text
}

function unique<T>(values: T[]): T[] {
  return [...new Set(values)]
}

function notFound(id: number): AppError {
  return new AppError('WEBHOOK_NOT_FOUND', `Webhook endpoint ${id} not found`)
}
