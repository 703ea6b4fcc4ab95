import { requireFeature } from '../accounts/features.ts'
import { chosenConnection, connectionRef } from '../connections/selection.ts'
import type { SendingConnection } from '../db/connections.ts'
import { type Queued, unvouchedQueued } from '../db/queue.ts'
import type { Sql } from '../db/sql.ts'
import type { Vouch } from '../db/vouch.ts'
import type { Caller } from '../keys/caller.ts'
import type { CallerClaim } from '../keys/claim.ts'
import { currentRequestId } from '../log.ts'
import type { EmailRequest } from './email-request.ts'
import { outboxMessage } from './outbox.ts'
import { findRemembering, type RememberedRoute, rememberedRoute } from './remembered-route.ts'
import { sendRounds } from './send-rounds.ts'

export interface EnqueueResult {
  success: true
  message: string
  outboxId: number
  from: string
  queuedAt: string
}

interface Accepted {
  connection: SendingConnection
  queued: Queued
}

/**
 * POST /enqueue after validation (and the plan check): the connection is chosen as for /send
 * except that a paused one is accepted (the mail waits for it). The outbox record and the job
 * that sends it are written in one statement (with those of the connection's other requests
 * then waiting), so accepted mail always has a worker run coming. With its caller and
 * connection remembered from an earlier request, that statement is the only one: it checks
 * they still hold, and the request reads them again if not.
 */
export async function enqueue(sql: Sql, claim: CallerClaim, request: EmailRequest): Promise<EnqueueResult> {
  const route = claim.confirmed ? undefined : rememberedRoute(sql, claim, request.from, 'queued')
  const accepted =
    (route && (await enqueueAsRemembered(sql, route, request))) ??
    (await enqueueAsFound(sql, await claim.confirm(), request))
  return {
    success: true,
    message: 'Email queued for sending',
    outboxId: accepted.queued.id,
    from: accepted.connection.from_address,
    queuedAt: accepted.queued.queued_at.toISOString(),
  }
}

async function enqueueAsRemembered(
  sql: Sql,
  route: RememberedRoute,
  request: EmailRequest,
): Promise<Accepted | undefined> {
  const queued = await queue(sql, route.caller, route.connection, request, route.vouch)
  route.checked(queued === 'stale')
  return queued === 'stale' ? undefined : { connection: route.connection, queued }
}

async function enqueueAsFound(sql: Sql, caller: Caller, request: EmailRequest): Promise<Accepted> {
  // The plan was checked on the remembered caller, which may have been out of date.
  requireFeature(caller, 'asyncSending')
  const ref = connectionRef(caller, request.from)
  const found = await findRemembering(sql, { accountId: caller.accountId, key: null, ref })
  const connection = chosenConnection(caller, request.from, found.connection, 'queued')
  return { connection, queued: unvouchedQueued(await queue(sql, caller, connection, request)) }
}

function queue(
  sql: Sql,
  caller: Caller,
  connection: SendingConnection,
  request: EmailRequest,
  vouch?: Vouch,
): Promise<Queued | 'stale'> {
  return sendRounds(sql).enqueue(connection.id, {
    ...outboxMessage(caller, connection, request),
    text_body: request.text_body,
    html_body: request.html_body,
    requestId: currentRequestId() ?? null,
    ...(vouch === undefined ? {} : { vouch }),
  })
}
