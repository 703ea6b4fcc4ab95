import type { Payload } from './audiences.ts'
import { dueInMs, webhookRunComing, webhookRunRequest } from './jobs.ts'
import type { Db, Fragment, Sql } from './sql.ts'
import { type OwnClaims, orphanedClaim } from './worker-processes.ts'

/**
 * Webhooks (tables webhook_endpoints, webhook_events, webhook_deliveries): an account's
 * endpoints, the events recorded for them in the transactions of the state changes they report,
 * and one delivery per event and endpoint, which the worker sends.
 */

export interface EndpointRow {
  id: number
  url: string
  description: string | null
  events: string[]
  enabled: boolean
  disabled_reason: string | null
  /** Since when every attempt failed (API timestamp shape); null when the last one succeeded. */
  failing_since: string | null
  created_at: string
  updated_at: string
}

const COLUMNS = (db: Db) => db`
  id, url, description, events, enabled, disabled_reason, api_timestamp(failing_since) as failing_since,
  api_timestamp(created_at) as created_at, api_timestamp(updated_at) as updated_at`

/** ISO 8601 with milliseconds and `Z`, as the API's other date-times. */
export function isoTime(db: Db, value: Fragment): Fragment {
  return db`to_char(${value} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
}

export interface NewEndpoint {
  url: string
  description: string | null
  events: string[]
  secretSealed: string
}

export async function insertEndpoint(db: Db, accountId: number, endpoint: NewEndpoint): Promise<EndpointRow> {
  const [row] = await db<EndpointRow[]>`
    insert into webhook_endpoints (account_id, url, description, events, secret_sealed)
    values (${accountId}, ${endpoint.url}, ${endpoint.description}, ${endpoint.events}, ${endpoint.secretSealed})
    returning ${COLUMNS(db)}`
  if (!row) throw new Error('the webhook endpoint was not recorded')
  return row
}

export async function countEndpoints(db: Db, accountId: number): Promise<number> {
  const [row] = await db<{ count: number }[]>`
    select count(*)::int as count from webhook_endpoints where account_id = ${accountId}`
  return row?.count ?? 0
}

export function endpointsOf(db: Db, accountId: number): Promise<EndpointRow[]> {
  return db<EndpointRow[]>`
    select ${COLUMNS(db)} from webhook_endpoints where account_id = ${accountId} order by id`
}

export async function endpointById(db: Db, accountId: number, id: number): Promise<EndpointRow | undefined> {
  const [row] = await db<EndpointRow[]>`
    select ${COLUMNS(db)} from webhook_endpoints where id = ${id} and account_id = ${accountId}`
  return row
}

export interface EndpointChanges {
  url?: string | undefined
  description?: string | undefined
  events?: string[] | undefined
  enabled?: boolean | undefined
}

/**
 * Changes the endpoint. Enabling it starts afresh (no failure streak, no reason); disabling it
 * notes that its owner did. Undefined when the account has no such endpoint.
 */
export async function updateEndpointRow(
  db: Db,
  accountId: number,
  id: number,
  changes: EndpointChanges,
  disabledReason: string,
): Promise<EndpointRow | undefined> {
  const enabled = changes.enabled
  const [row] = await db<EndpointRow[]>`
    update webhook_endpoints set
      url = coalesce(${changes.url ?? null}, url),
      description = coalesce(${changes.description ?? null}, description),
      events = coalesce(${changes.events ?? null}::text[], events),
      ${
        enabled === undefined
          ? db`enabled = enabled`
          : enabled
            ? db`enabled = true, disabled_reason = null, disabled_at = null,
                 failing_since = case when enabled then failing_since end`
            : db`enabled = false,
                 disabled_reason = case when enabled then ${disabledReason} else disabled_reason end,
                 disabled_at = case when enabled then mailroom_now() else disabled_at end`
      },
      updated_at = mailroom_now()
    where id = ${id} and account_id = ${accountId}
    returning ${COLUMNS(db)}`
  return row
}

/** Replaces the endpoint's sealed secret; false when the account has no such endpoint. */
export async function setEndpointSecret(
  db: Db,
  accountId: number,
  id: number,
  sealed: string,
): Promise<boolean> {
  const changed = await db`
    update webhook_endpoints set secret_sealed = ${sealed}, updated_at = mailroom_now()
    where id = ${id} and account_id = ${accountId}`
  return changed.count > 0
}

/** Deletes the endpoint with its deliveries; false when the account has no such endpoint. */
export async function deleteEndpointRow(db: Db, accountId: number, id: number): Promise<boolean> {
  const deleted = await db`delete from webhook_endpoints where id = ${id} and account_id = ${accountId}`
  return deleted.count > 0
}

// ---------------------------------------------------------------- Recording events

/**
 * Statements (the tail of a WITH list, to follow a comma) that record the events `source`
 * yields (a query of `account_id`, `type` and `data`): each becomes an event with a delivery
 * for every enabled endpoint of its account subscribed to its type, and a run of those
 * endpoints' deliveries is asked for. An event nobody listens to is not stored, so that the send
 * path pays one index look-up when an account has no endpoints. The statement must refer to
 * `webhook_run` (see eventsRecorded) for the runs to be asked for.
 */
export function recordedEvents(db: Db, source: Fragment): Fragment {
  return db`
    webhook_source as (${source}),
    webhook_event as (
      insert into webhook_events (account_id, type, data)
      select s.account_id, s.type, s.data from webhook_source s
      where exists (
        select 1 from webhook_endpoints e
        where e.account_id = s.account_id and e.enabled and s.type = any(e.events))
      returning id, account_id, type
    ),
    webhook_delivery as (
      insert into webhook_deliveries (endpoint_id, event_id)
      select e.id, v.id from webhook_event v
      join webhook_endpoints e on e.account_id = v.account_id and e.enabled and v.type = any(e.events)
      returning endpoint_id
    ),
    webhook_run as (${webhookRunRequest(db, db`select distinct endpoint_id from webhook_delivery`)})`
}

/** What a statement with recordedEvents refers to, so that the runs are asked for. */
export function eventsRecorded(db: Db): Fragment {
  return db`(select count(*) from webhook_run)`
}

/** Records one event of the account (see recordedEvents), in the caller's transaction. */
export async function recordEvent(db: Db, accountId: number, type: string, data: object): Promise<void> {
  await db`
    with ${recordedEvents(db, db`select ${accountId}::int as account_id, ${type}::text as type, ${db.json(data as never)}::jsonb as data`)}
    select ${eventsRecorded(db)}`
}

/** The audience.member_added event of the audience's member with that address (in its transaction). */
export async function recordMemberAdded(db: Db, audienceId: number, email: string): Promise<void> {
  const source = db`
    select a.account_id, 'audience.member_added' as type,
      jsonb_build_object('audience_id', a.id, 'member_id', m.id, 'email', m.email,
                         'payload', coalesce(m.payload, '{}'::jsonb)) as data
    from audience_members m join audiences a on a.id = m.audience_id
    where m.audience_id = ${audienceId} and lower(m.email) = lower(${email})`
  await db`with ${recordedEvents(db, source)} select ${eventsRecorded(db)}`
}

/**
 * Where an email event of a batch recipient keeps its batch content's reference: its subject is
 * rendered from it when the event is sent (SQL cannot render placeholders), then the key dropped.
 */
export const BATCH_CONTENT_KEY = '_batch_content'

/** What an email event's data keeps under BATCH_CONTENT_KEY. */
export interface BatchContentRef {
  id: number
  payload: Payload
}

// ---------------------------------------------------------------- Deliveries

/** A delivery claimed for an attempt, with what the request needs. */
export interface ClaimedDelivery {
  id: number
  /** This attempt's number. */
  attempts: number
  /** The webhook-id: the event's, the same on every attempt. */
  public_id: string
  type: string
  data: unknown
  /** When the event happened (ISO 8601). */
  timestamp: string
  url: string
  secret_sealed: string
}

/** Takes up to `limit` of the endpoint's due deliveries for `processId`; none when it is disabled. */
export function claimDeliveries(
  db: Db,
  endpointId: number,
  processId: string,
  limit: number,
): Promise<ClaimedDelivery[]> {
  return db<ClaimedDelivery[]>`
    with next as (
      select id from webhook_deliveries
      where endpoint_id = ${endpointId} and status = 'pending' and next_attempt_at <= mailroom_now()
      order by next_attempt_at, id
      limit ${limit}
      for update skip locked
    )
    update webhook_deliveries d set status = 'sending', claimed_by = ${processId}, claimed_at = mailroom_now(),
      attempts = d.attempts + 1, updated_at = mailroom_now()
    from next, webhook_events v, webhook_endpoints e
    where d.id = next.id and v.id = d.event_id and e.id = d.endpoint_id and e.enabled
    returning d.id, d.attempts, v.public_id, v.type, v.data, ${isoTime(db, db`v.created_at`)} as timestamp,
      e.url, e.secret_sealed`
}

export interface DeliveryResult {
  /** The endpoint's HTTP status; null when it did not answer. */
  responseStatus: number | null
  /** What went wrong; null on a success. */
  error: string | null
  /** After a failure: when to try again, or null to give up. */
  retryInMs: number | null
}

/**
 * Records an attempt: the delivery succeeded, waits for its next attempt, or failed for good;
 * the endpoint's failure streak ends on a success, starts (or goes on) otherwise, and once it is
 * `disableAfterMs` long the endpoint is disabled with the reason, its waiting deliveries failed.
 * Returns whether this attempt disabled the endpoint.
 */
export function settleDelivery(
  sql: Sql,
  id: number,
  result: DeliveryResult,
  disableAfterMs: number,
): Promise<boolean> {
  // One transaction: an endpoint is never seen disabled while a delivery of it still waits.
  return sql.begin((tx) => settleInTransaction(tx, id, result, disableAfterMs))
}

async function settleInTransaction(db: Db, id: number, result: DeliveryResult, disableAfterMs: number) {
  const ok = result.error === null
  const status = ok ? 'delivered' : result.retryInMs === null ? 'failed' : 'pending'
  const [row] = await db<{ endpoint_id: number; newly_disabled: boolean; failed_too_long: boolean }[]>`
    with delivery as (
      update webhook_deliveries set status = ${status}, claimed_by = null, claimed_at = null,
        response_status = ${result.responseStatus}, error = ${result.error}, last_attempt_at = mailroom_now(),
        next_attempt_at = ${result.retryInMs === null ? null : db`mailroom_now() + ${result.retryInMs} * interval '1 millisecond'`},
        updated_at = mailroom_now()
      where id = ${id} and status = 'sending'
      returning endpoint_id
    ), endpoint as (
      update webhook_endpoints e set
        ${
          ok
            ? db`failing_since = null`
            : db`failing_since = coalesce(e.failing_since, mailroom_now()),
                 enabled = e.enabled and not ${disabling(db, disableAfterMs)},
                 disabled_at = case when e.enabled and ${disabling(db, disableAfterMs)} then mailroom_now() else e.disabled_at end,
                 disabled_reason = case when e.enabled and ${disabling(db, disableAfterMs)}
                   then 'Every delivery failed since ' || api_timestamp(e.failing_since) || ' UTC; the last one: '
                        || ${result.error ?? ''}
                   else e.disabled_reason end`
        }
      -- A success changes the endpoint only when it was failing: writing its row anyway would
      -- have every delivery of the endpoint wait for the one before to commit.
      from delivery where e.id = delivery.endpoint_id ${ok ? db`and e.failing_since is not null` : db``}
      -- mailroom_now() stands still within a transaction: only a disabling by this statement matches it.
      returning e.id, (${ok ? db`false` : db`not e.enabled and e.disabled_at = mailroom_now()`}) as newly_disabled,
        (${ok ? db`false` : db`not e.enabled and ${disabling(db, disableAfterMs)}`}) as failed_too_long
    )
    select id as endpoint_id, newly_disabled, failed_too_long from endpoint`
  // Disabled for failing too long, by this attempt or by another one while this was under way:
  // nothing waiting is ever claimed again, so it ends now, this delivery too. (An endpoint its
  // owner disabled keeps its waiting deliveries.)
  if (row?.failed_too_long) await failWaitingDeliveries(db, row.endpoint_id, id)
  return row?.newly_disabled ?? false
}

/** Ends the endpoint's waiting deliveries `failed`; `attempted`'s own error stays. */
async function failWaitingDeliveries(db: Db, endpointId: number, attempted: number): Promise<void> {
  await db`
    update webhook_deliveries set status = 'failed', next_attempt_at = null, updated_at = mailroom_now(),
      error = case when id = ${attempted} then error
                   else 'Not sent: the endpoint was disabled after failing for too long' end
    where endpoint_id = ${endpointId} and status = 'pending'`
}

/** Whether the endpoint (alias `e`, before the update) has failed for `disableAfterMs` by now. */
function disabling(db: Db, disableAfterMs: number): Fragment {
  return db`(e.failing_since is not null and e.failing_since <= mailroom_now() - ${disableAfterMs} * interval '1 millisecond')`
}

/** How long until the endpoint's next delivery is due (0: now); null when none waits or it is disabled. */
export async function nextDeliveryDueInMs(db: Db, endpointId: number): Promise<number | null> {
  const [row] = await db<{ due_in_ms: number | null }[]>`
    select ceil(extract(epoch from min(d.next_attempt_at) - mailroom_now()) * 1000)::float8 as due_in_ms
    from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
    where d.endpoint_id = ${endpointId} and d.status = 'pending' and e.enabled`
  return dueInMs(row?.due_in_ms ?? null)
}

export interface DeliveryView {
  id: number
  /** The webhook-id. */
  event_id: string
  type: string
  status: 'pending' | 'sending' | 'delivered' | 'failed'
  attempts: number
  response_status: number | null
  error: string | null
  next_attempt_at: string | null
  last_attempt_at: string | null
  created_at: string
}

/** The endpoint's latest deliveries, newest first. */
export function deliveriesOf(db: Db, endpointId: number, limit: number): Promise<DeliveryView[]> {
  return db<DeliveryView[]>`
    -- A bigint column reads as a string: the contract's id is an integer (exact up to 2^53).
    select d.id::float8 as id, v.public_id as event_id, v.type, d.status, d.attempts, d.response_status, d.error,
      case when d.status = 'pending' then api_timestamp(d.next_attempt_at) end as next_attempt_at,
      api_timestamp(d.last_attempt_at) as last_attempt_at, api_timestamp(d.created_at) as created_at
    from webhook_deliveries d join webhook_events v on v.id = d.event_id
    where d.endpoint_id = ${endpointId}
    order by d.id desc limit ${limit}`
}

/**
 * Sends the delivery's event to its endpoint again as a new delivery, with the same webhook-id,
 * and asks for a run. Undefined when the endpoint has no such delivery.
 */
export async function redeliver(db: Db, endpointId: number, deliveryId: number): Promise<number | undefined> {
  const [row] = await db<{ id: number }[]>`
    with again as (
      insert into webhook_deliveries (endpoint_id, event_id)
      select endpoint_id, event_id from webhook_deliveries where id = ${deliveryId} and endpoint_id = ${endpointId}
      returning id, endpoint_id
    ), run as (${webhookRunRequest(db, db`select endpoint_id from again`)})
    select id from again, (select count(*) from run) as requested`
  return row?.id
}

// ---------------------------------------------------------------- Liveness and retention

/** Said of a delivery whose worker stopped in the middle of it. */
const INTERRUPTED = 'The worker sending it stopped before the endpoint answered; it is sent again'
/** A claim older than this is taken for lost (far beyond any request's timeout). */
const CLAIM_LEASE_SECONDS = 300

/**
 * Puts back the deliveries held by worker processes that are gone (or held too long), and those
 * claimed in the sweeping process's name that it does not hold (older than `graceMs`), due now:
 * their outcome is unknown, so they are sent again with the same webhook-id. Returns their endpoints.
 */
export async function releaseOrphanedDeliveries(db: Db, own: OwnClaims, graceMs: number): Promise<number[]> {
  const rows = await db<{ endpoint_id: number }[]>`
    update webhook_deliveries set status = 'pending', claimed_by = null, claimed_at = null,
      next_attempt_at = mailroom_now(), error = ${INTERRUPTED}, updated_at = mailroom_now()
    where ${orphanedClaim(db, 'claimed_at', CLAIM_LEASE_SECONDS, own, graceMs)}
    returning endpoint_id`
  return [...new Set(rows.map((r) => r.endpoint_id))]
}

/** Enabled endpoints with deliveries due `graceMs` ago and no run coming: a safety net. */
export async function endpointsWithStrandedDeliveries(db: Db, graceMs: number): Promise<number[]> {
  const rows = await db<{ endpoint_id: number }[]>`
    select distinct d.endpoint_id from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
    where d.status = 'pending' and e.enabled and d.next_attempt_at <= mailroom_now() - ${graceMs} * interval '1 millisecond'
      and not ${webhookRunComing(db, db`d.endpoint_id`)}`
  return rows.map((r) => r.endpoint_id)
}

/** Events older than `days` go, with their deliveries, unless one is being sent right now. */
export async function purgeWebhookEvents(db: Db, days: number): Promise<number> {
  const gone = await db`
    delete from webhook_events v
    where v.created_at < mailroom_now() - make_interval(days => ${days})
      and not exists (select 1 from webhook_deliveries d where d.event_id = v.id and d.status = 'sending')`
  return gone.count
}
