import { selectConnection } from '../connections/selection.ts'
import { enqueueMessages } from '../db/outbox.ts'
import type { Db } from '../db/sql.ts'
import type { Caller } from '../keys/caller.ts'
import type { EmailRequest } from './email-request.ts'
import { outboxMessage } from './outbox.ts'

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
 * that sends it are written in one statement, so accepted mail always has a worker run coming.
 */
export async function enqueue(db: Db, caller: Caller, request: EmailRequest): Promise<EnqueueResult> {
  const connection = await selectConnection(db, caller, request.from, 'queued')
  const [queued] = await enqueueMessages(db, connection.id, [
    {
      ...outboxMessage(caller, connection, request),
      text_body: request.text_body,
      html_body: request.html_body,
    },
  ])
  if (!queued) throw new Error('the queued message was not recorded')
  return {
    success: true,
    message: 'Email queued for sending',
    outboxId: queued.id,
    from: connection.from_address,
    queuedAt: queued.queued_at.toISOString(),
  }
}
