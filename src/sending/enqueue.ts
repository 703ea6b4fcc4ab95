import { requireFeature } from '../accounts/features.ts'
import { chosenConnection, connectionRef } from '../connections/selection.ts'
import type { SendingConnection } from '../db/connections.ts'
import type { Recheck } from '../db/fast-path.ts'
import { type NotQueued, type Queued, queuedWithoutRecheck } from '../db/queue-entry.ts'
import type { Db } from '../db/sql.ts'
import { type CachedRoute, cachedRoute, findAndCache } from '../fast-path/cached-route.ts'
import type { RequestCaller } from '../fast-path/caller-cache.ts'
import type { FastPath } from '../fast-path/fast-path.ts'
import type { Caller } from '../keys/caller.ts'
import { currentRequestId } from '../log.ts'
import type { RecipientOutcome } from '../smtp/outcome.ts'
import {
  leaveOutSuppressed,
  type SuppressedAddress,
  suppressedRefusal,
  withoutSuppressed,
  withSuppressedSaid,
} from '../suppressions/applying.ts'
import { outboxMessage } from './attempts.ts'
import type { EmailRequest } from './email-request.ts'
import { queuedFields } from './message-extras.ts'
import { envelopeOf } from './recipients.ts'

export interface EnqueueResult {
  success: true
  message: string
  outboxId: number
  from: string
  queuedAt: string
  /** When a scheduled email is due; left out for one due at once, whose answer is as it was. */
  scheduledAt?: string
  /** The recipients left out because the account suppressed them. */
  suppressedRecipients?: SuppressedAddress[]
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
 * connection cached from an earlier request, that statement is the only one: it rechecks
 * they still hold, and the request reads them again if not (src/fast-path/README.md). The same
 * statement refuses a request with a recipient suppressed for all mail, queuing nothing; only
 * then are the suppressions read and the request queued without them.
 */
export async function enqueue(
  services: { sql: Db; fastPath: FastPath },
  requestCaller: RequestCaller,
  request: EmailRequest,
  scheduledAt?: Date,
): Promise<EnqueueResult> {
  const queued = await enqueueUnsuppressed(services.fastPath, requestCaller, request, scheduledAt)
  if (queued !== 'suppressed') return queued
  return enqueueLeavingOut(services, requestCaller, request, scheduledAt)
}

/** POST /enqueue of a request some of whose recipients are suppressed for all mail. */
async function enqueueLeavingOut(
  { sql, fastPath }: { sql: Db; fastPath: FastPath },
  requestCaller: RequestCaller,
  request: EmailRequest,
  scheduledAt?: Date,
): Promise<EnqueueResult> {
  const left = await leaveOutSuppressed(sql, requestCaller.caller.accountId, request)
  if (left.everyone) throw await suppressedRefusal(requestCaller, left.suppressed)
  // The left-out recipients are kept on the record, written by the statement that queues it.
  const leftOut = withoutSuppressed(envelopeOf(request), left.suppressed).skipped
  const queued = { ...left.request, leftOut }
  const result = await enqueueUnsuppressed(fastPath, requestCaller, queued, scheduledAt)
  // Refused again: an address was suppressed since the read above, and is left out too.
  if (result === 'suppressed')
    return enqueueLeavingOut({ sql, fastPath }, requestCaller, request, scheduledAt)
  return withSuppressedSaid(result, left.suppressed)
}

/** The request queued; `suppressed` when a recipient is suppressed for all mail (nothing queued). */
async function enqueueUnsuppressed(
  fastPath: FastPath,
  requestCaller: RequestCaller,
  request: QueuedRequest,
  scheduledAt: Date | undefined,
): Promise<EnqueueResult | 'suppressed'> {
  const queued = { ...request, scheduledAt }
  const route = requestCaller.checked
    ? undefined
    : cachedRoute(fastPath, requestCaller, request.from, 'queued')
  const accepted =
    (route && (await enqueueOnCachedRoute(fastPath, route, queued))) ??
    (await enqueueAsFound(fastPath, await requestCaller.check(), queued))
  if (accepted === 'suppressed') return accepted
  return {
    success: true,
    message: 'Email queued for sending',
    outboxId: accepted.queued.id,
    from: accepted.connection.from_address,
    queuedAt: accepted.queued.queued_at.toISOString(),
    ...(scheduledAt && { scheduledAt: scheduledAt.toISOString() }),
  }
}

/** An email request with the time it is scheduled for, if any, and the recipients it left out. */
type QueuedRequest = EmailRequest & { scheduledAt?: Date | undefined; leftOut?: RecipientOutcome[] }

async function enqueueOnCachedRoute(
  fastPath: FastPath,
  route: CachedRoute,
  request: QueuedRequest,
): Promise<Accepted | 'suppressed' | undefined> {
  const queued = await queue(fastPath, route.caller, route.connection, request, route.recheck)
  route.rechecked(queued === 'stale')
  if (typeof queued === 'string') return queued === 'stale' ? undefined : queued
  return { connection: route.connection, queued }
}

async function enqueueAsFound(
  fastPath: FastPath,
  caller: Caller,
  request: QueuedRequest,
): Promise<Accepted | 'suppressed'> {
  // The plan was checked on the cached caller, which may have been out of date.
  requireFeature(caller, 'asyncSending')
  const ref = connectionRef(caller, request.from)
  const found = await findAndCache(fastPath, { accountId: caller.accountId, key: null, ref })
  const connection = chosenConnection(caller, request.from, found.connection, 'queued')
  const queued = await queue(fastPath, caller, connection, request)
  return queued === 'suppressed' ? queued : { connection, queued: queuedWithoutRecheck(queued) }
}

function queue(
  fastPath: FastPath,
  caller: Caller,
  connection: SendingConnection,
  request: QueuedRequest,
  recheck?: Recheck,
): Promise<Queued | NotQueued> {
  return fastPath.statements.enqueue(connection.id, {
    ...outboxMessage(caller, connection, request),
    text_body: request.text_body,
    html_body: request.html_body,
    ...queuedFields(request.extras),
    ...(request.tags && { tags: request.tags }),
    requestId: currentRequestId() ?? null,
    scheduledAt: request.scheduledAt,
    ...(request.leftOut?.length && { recipients: request.leftOut }),
    suppressible: true,
    ...(recheck === undefined ? {} : { recheck }),
  })
}
