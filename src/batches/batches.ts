import type { z } from 'zod'
import { AppError } from '../app-error.ts'
import { checkBatchAudience, createTemporaryAudience } from '../audiences/audiences.ts'
import { selectConnection } from '../connections/selection.ts'
import { deleteAudiences, membersOf } from '../db/audiences.ts'
import {
  type BatchRow,
  batchById,
  deleteBatchRow,
  failedRecipients,
  insertBatch,
  insertBatchContent,
  requeueFailedOfBatch,
  setBatchRecipients,
  setBatchSchedule,
  storeBatchRecipients,
} from '../db/batches.ts'
import { cancelBatchRows } from '../db/cancellation.ts'
import { isStorableId } from '../db/ids.ts'
import { scheduleQueueRun } from '../db/jobs.ts'
import { storeBatchFields } from '../db/message-fields.ts'
import type { FailedRecipient, RetriedBy, Tag } from '../db/outbox-types.ts'
import { enqueueMessages, type QueuedMessage } from '../db/queue-entry.ts'
import type { Db, Sql } from '../db/sql.ts'
import { templateContent } from '../db/templates.ts'
import type { BatchSchema } from '../generated/routes.ts'
import type { Caller } from '../keys/caller.ts'
import { currentRequestId } from '../log.ts'
import { newMessageId } from '../sending/attempts.ts'
import { queuedFields } from '../sending/message-extras.ts'
import { uniqueAddresses } from '../sending/recipients.ts'
import { isBatchCancelable, scheduledTime } from '../sending/scheduling.ts'
import { compileContent, type MessageContent } from '../templates/placeholders.ts'
import { type BatchRequest, batchExtras, batchTags, checkBatchMode, checkBatchSize } from './batch-request.ts'

/** A batch exactly as the contract shows it. */
export type Batch = z.infer<typeof BatchSchema>

export interface BatchCreated {
  success: true
  batch_id: number
  total_count: number
  message: string
  status_url: string
}

/**
 * POST /send/batch after validation (and the plan check): the mode rules, the size limit, the
 * saved template and audience, then the connection (as for /enqueue: a paused one is accepted).
 * The content is stored once, and the recipients (an audience's, or the temporary audience of
 * `recipients`) are copied inside PostgreSQL, whatever their number, to the batch's narrow store
 * in one statement: the batch is thus unaffected by later changes to its template or audience, and
 * its total_count is known. The worker then moves them into the outbox in chunks (one record per
 * recipient, its address and payload), a little ahead of delivery (see expansion.ts); each
 * message is rendered when it is sent. The messages of `emails` (at most 1000, each with its own
 * content) are rendered here and queued at once, as the request carries them. A batch with
 * `scheduled_at` (checked against `now`) is expanded at that time, or its `emails` are due then.
 */
export async function createBatch(
  sql: Sql,
  caller: Caller,
  body: BatchRequest,
  now: number,
): Promise<BatchCreated> {
  checkBatchMode(body)
  const scheduledAt = scheduledTime(body.scheduled_at, now)
  const extras = await batchExtras(body)
  const tags = batchTags(body)
  const unique = body.recipients ? uniqueAddresses(body.recipients) : undefined
  if (unique) checkBatchSize('recipients', unique.length)
  if (body.emails) checkBatchSize('emails', body.emails.length)
  const content = body.emails
    ? undefined
    : (body.template ?? (await savedTemplate(sql, caller.accountId, body.template_id as number)))
  if (body.audience_id !== undefined) await checkBatchAudience(sql, caller.accountId, body.audience_id)
  const connection = await selectConnection(sql, caller, body.from, 'queued')
  const batch = await sql.begin(async (tx) => {
    const row = await insertBatch(tx, {
      accountId: caller.accountId,
      connectionId: connection.id,
      // An empty name is none: the batch, and the temporary audience named after it, take the default.
      name: body.name || null,
      totalCount: body.emails?.length ?? 0,
      tags,
    })
    if (extras) await storeBatchFields(tx, row.id, queuedFields(extras))
    if (scheduledAt) await setBatchSchedule(tx, row.id, scheduledAt)
    if (body.emails) {
      const email = renderedEmail(caller.accountId, connection.from_address, row.id, tags)
      await enqueueMessages(
        tx,
        connection.id,
        body.emails.map((item) => ({ ...email(item), scheduledAt })),
      )
      return { id: row.id, totalCount: body.emails.length }
    }
    const temporaryAudienceId = unique
      ? await createTemporaryAudience(tx, caller.accountId, unique, row.name)
      : null
    const template = content as MessageContent
    const totalCount = await storeBatchRecipients(
      tx,
      row.id,
      membersOf(tx, temporaryAudienceId ?? (body.audience_id as number)),
    )
    // Emptied since it was checked: nothing of the batch is kept.
    if (totalCount === 0) throw new AppError('AUDIENCE_HAS_NO_MEMBERS')
    await setBatchRecipients(
      tx,
      row.id,
      {
        totalCount,
        temporaryAudienceId,
        contentId: await insertBatchContent(tx, caller.accountId, {
          subject: template.subject,
          text_body: template.text_body ?? null,
          html_body: template.html_body ?? null,
        }),
        from: connection.from_address,
        requestId: currentRequestId() ?? null,
        // An audience's members get their unsubscribe link; a `recipients` batch's list is no audience of theirs.
        unsubscribeAudienceId: temporaryAudienceId === null ? (body.audience_id as number) : null,
      },
      scheduledAt ? scheduledAt.getTime() - now : 0,
    )
    return { id: row.id, totalCount }
  })
  return {
    success: true,
    batch_id: batch.id,
    total_count: batch.totalCount,
    message: 'Batch created and started',
    status_url: `/v1/batches/${batch.id}`,
  }
}

type BatchEmail = NonNullable<BatchRequest['emails']>[number]

/** A message of an `emails` batch, rendered with every placeholder empty (it has no payload). */
function renderedEmail(accountId: number, from: string, batchId: number, tags: Tag[]) {
  return (email: BatchEmail): QueuedMessage => {
    const content = compileContent(email)(null)
    return {
      accountId,
      from,
      to: [email.to],
      cc: [],
      bcc: [],
      subject: content.subject,
      text_body: content.text_body,
      html_body: content.html_body,
      messageId: newMessageId(from),
      batchId,
      tags,
    }
  }
}

async function savedTemplate(db: Db, accountId: number, id: number): Promise<MessageContent> {
  const template = isStorableId(id) ? await templateContent(db, accountId, id) : undefined
  if (!template) throw new AppError('RESOURCE_NOT_FOUND', `No template with id ${id} on this account`)
  return template
}

/**
 * A batch's states: `pending` until a worker starts on it (a scheduled one until its time), `running`
 * until every recipient is handled (sent, failed or canceled), then `completed` if at least one was
 * sent, otherwise `failed`; `canceled` once canceled, wholly handled.
 */
export function asBatch(row: BatchRow): Batch {
  const handled = row.sent_count + row.failed_count + row.canceled_count
  const done = handled >= row.total_count
  const ended = done ? (row.sent_count > 0 ? 'completed' : 'failed') : row.started ? 'running' : 'pending'
  const status = row.canceled ? 'canceled' : ended
  return {
    id: row.id,
    name: row.name,
    status,
    total_count: row.total_count,
    sent_count: row.sent_count,
    failed_count: row.failed_count,
    progress: row.canceled || row.total_count === 0 ? 100 : Math.floor((100 * handled) / row.total_count),
    ...(row.scheduled_at !== null && { scheduled_at: row.scheduled_at }),
    created_at: row.created_at,
    updated_at: row.updated_at,
  }
}

/** The account's batch; another account's is as missing as one that never was. */
async function ownBatch(db: Db, accountId: number | null, id: number, lock = false): Promise<BatchRow> {
  const row = isStorableId(id) ? await batchById(db, id, lock) : undefined
  if (!row || (accountId !== null && row.account_id !== accountId)) {
    // The operator command asks for any batch, on no account in particular.
    const where = accountId === null ? '' : ' on this account'
    throw new AppError('BATCH_NOT_FOUND', `No batch with id ${id}${where}`)
  }
  return row
}

export async function getBatch(sql: Sql, accountId: number, id: number): Promise<Batch> {
  return asBatch(await ownBatch(sql, accountId, id))
}

/** Only an ended batch can go; its recipient list (and temporary audience) goes with it. */
export async function deleteBatch(sql: Sql, accountId: number, id: number): Promise<void> {
  await sql.begin(async (tx) => {
    const batch = asBatch(await ownBatch(tx, accountId, id, true))
    if (batch.status === 'pending' || batch.status === 'running') {
      throw new AppError(
        'INVALID_STATUS',
        `Batch ${id} is ${batch.status}; only completed, failed or canceled batches can be deleted`,
      )
    }
    const { temporaryAudienceId } = await deleteBatchRow(tx, id)
    if (temporaryAudienceId !== null) await deleteAudiences(tx, [temporaryAudienceId])
  })
}

/**
 * POST /batches/{id}/cancel and the batch page's Cancel: stops a pending or running batch (see
 * cancelBatchRows), locked meanwhile, so that its expansion moves nothing more.
 */
export async function cancelBatch(sql: Sql, accountId: number, id: number): Promise<Batch> {
  return sql.begin(async (tx) => {
    const { status } = asBatch(await ownBatch(tx, accountId, id, true))
    if (!isBatchCancelable(status)) {
      throw new AppError(
        'BATCH_NOT_CANCELABLE',
        `Batch ${id} is ${status}; only a pending or running batch can be canceled`,
        { details: { status } },
      )
    }
    await cancelBatchRows(tx, id)
    return asBatch(await ownBatch(tx, accountId, id))
  })
}

/** `mailroom batch failures <id>`: the batch's failed recipients with their errors. */
export async function batchFailures(sql: Sql, id: number): Promise<FailedRecipient[]> {
  await ownBatch(sql, null, id)
  return failedRecipients(sql, id)
}

/**
 * `mailroom batch retry <id>`: queues the failed recipients again (through the batch's
 * connection when theirs was deleted), which brings the batch back to running.
 */
export async function retryBatch(sql: Sql, id: number, by: RetriedBy): Promise<Batch> {
  return sql.begin(async (tx) => {
    const batch = await ownBatch(tx, null, id, true)
    const retried = await requeueFailedOfBatch(tx, id, batch.connection_id, by)
    if (retried.some((connectionId) => connectionId === null)) {
      throw new AppError(
        'BATCH_CONNECTION_DELETED',
        `The connection batch ${id} was sent through was deleted`,
      )
    }
    for (const connectionId of new Set(retried as number[])) await scheduleQueueRun(tx, connectionId)
    return asBatch(await ownBatch(tx, null, id))
  })
}
