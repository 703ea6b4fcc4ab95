import { chosenConnection, connectionRef } from '../connections/selection.ts'
import type { Sql } from '../db/sql.ts'
import type { Caller } from '../keys/caller.ts'
import { currentRequestId } from '../log.ts'
import type { EmailRequest } from './email-request.ts'
import { outboxMessage } from './outbox.ts'
import { sendRounds } from './send-rounds.ts'

export interface EnqueueResult {
  success: true
  message: string
  outboxId: number
  from: string
  queuedAt: string
}

/**
 * POST /enqueue after validation (and the plan check): the connection is chosen as for /send
 * except that a paused one is accepted (the mail waits for it). The outbox record and the job
 * that sends it are written in one statement (with those of the connection's other requests
 * then waiting), so accepted mail always has a worker run coming.
 */
export async function enqueue(sql: Sql, caller: Caller, request: EmailRequest): Promise<EnqueueResult> {
  const rounds = sendRounds(sql)
  const ref = connectionRef(caller, request.from)
  const found = await rounds.find({ accountId: caller.accountId, key: null, ref })
  const connection = chosenConnection(caller, request.from, found.connection, 'queued')
  const queued = await rounds.enqueue(connection.id, {
    ...outboxMessage(caller, connection, request),
    text_body: request.text_body,
    html_body: request.html_body,
    requestId: currentRequestId() ?? null,
  })
  return {
    success: true,
    message: 'Email queued for sending',
    outboxId: queued.id,
    from: connection.from_address,
    queuedAt: queued.queued_at.toISOString(),
  }
}
