import type { z } from 'zod'
import { audienceMembersForBatch, createTemporaryAudience } from '../audiences/audiences.ts'
import { selectConnection } from '../connections/selection.ts'
import { isStorableId } from '../db/ids.ts'
import type { Db, Sql } from '../db/sql.ts'
import { standardError } from '../errors.ts'
import type { BatchSchema } from '../generated/routes.ts'
import type { Caller } from '../keys/keys.ts'
import { newMessageId } from '../sending/outbox.ts'
import { enqueueMessages } from '../sending/queue.ts'
import { compileContent, type MessageContent, type Payload } from '../templates/placeholders.ts'
import { scheduleQueueRun } from '../worker/jobs.ts'
import { type BatchRequest, checkBatchMode, checkBatchSize, uniqueAddresses } from './batch-request.ts'

/** A batch exactly as the contract shows it. */
export type Batch = z.infer<typeof BatchSchema>

export interface BatchCreated {
  success: true
  batch_id: number
  total_count: number
  message: string
  status_url: string
}

/** One email of the batch to be: its recipient and the content rendered for them. */
interface Recipient {
  to: string
  content: ReturnType<ReturnType<typeof compileContent>>
}

/**
 * POST /send/batch after validation (and the plan check): the mode rules, the size limit, the
 * saved template and audience, then the connection (as for /enqueue: a paused one is accepted).
 * Every recipient's email is rendered now and queued with the batch in one transaction, so the
 * batch is unaffected by later changes to its template or audience.
 */
export async function createBatch(sql: Sql, caller: Caller, body: BatchRequest): Promise<BatchCreated> {
  checkBatchMode(body)
  const unique = body.recipients ? uniqueAddresses(body.recipients) : undefined
  if (unique) checkBatchSize('recipients', unique.length)
  if (body.emails) checkBatchSize('emails', body.emails.length)
  const recipients = await recipientsOf(sql, caller.accountId, body, unique)
  const connection = await selectConnection(sql, caller, body.from, 'queued')
  const batch = await sql.begin(async (tx) => {
    const [row] = await tx<{ id: number; name: string }[]>`
      insert into batches (account_id, connection_id, name, total_count)
      values (${caller.accountId}, ${connection.id},
              coalesce(${body.name ?? null}, 'Batch Send ' || api_timestamp(now())), ${recipients.length})
      returning id, name`
    if (!row) throw new Error('the batch was not recorded')
    if (unique) {
      const audienceId = await createTemporaryAudience(tx, caller.accountId, unique, row.name)
      await tx`update batches set temporary_audience_id = ${audienceId} where id = ${row.id}`
    }
    await enqueueMessages(
      tx,
      connection.id,
      recipients.map(({ to, content }) => ({
        accountId: caller.accountId,
        from: connection.from_address,
        to: [to],
        cc: [],
        bcc: [],
        subject: content.subject,
        text_body: content.text_body,
        html_body: content.html_body,
        messageId: newMessageId(connection.from_address),
        batchId: row.id,
      })),
    )
    return row
  })
  return {
    success: true,
    batch_id: batch.id,
    total_count: recipients.length,
    message: 'Batch created and started',
    status_url: `/v1/batches/${batch.id}`,
  }
}

/** Every recipient with its rendered content: placeholders filled from audience payloads, empty otherwise. */
async function recipientsOf(
  sql: Sql,
  accountId: number,
  body: BatchRequest,
  unique: string[] | undefined,
): Promise<Recipient[]> {
  if (body.emails) {
    return body.emails.map((email) => ({ to: email.to, content: compileContent(email)(null) }))
  }
  const content = body.template ?? (await savedTemplate(sql, accountId, body.template_id as number))
  const members: { email: string; payload: Payload }[] =
    body.audience_id !== undefined
      ? await audienceMembersForBatch(sql, accountId, body.audience_id)
      : (unique ?? []).map((email) => ({ email, payload: null }))
  const render = compileContent(content)
  return members.map((member) => ({ to: member.email, content: render(member.payload) }))
}

async function savedTemplate(sql: Sql, accountId: number, id: number): Promise<MessageContent> {
  const [template] = isStorableId(id)
    ? await sql<MessageContent[]>`
        select subject, text_body, html_body from templates where id = ${id} and account_id = ${accountId}`
    : []
  if (!template) throw standardError(404, 'RESOURCE_NOT_FOUND', `No template with id ${id} on this account`)
  return template
}

interface BatchRow {
  id: number
  account_id: number
  name: string
  total_count: number
  sent_count: number
  failed_count: number
  started: boolean
  created_at: string
  updated_at: string
}

/**
 * A batch with its counts read from its recipients' outbox records: the per-recipient records
 * are the truth, so the figures hold whatever stopped or crashed while it ran.
 */
async function batchRow(sql: Db, id: number, lock = false): Promise<BatchRow | undefined> {
  if (!isStorableId(id)) return undefined
  const [row] = await sql<BatchRow[]>`
    select b.id, b.account_id, b.name, b.total_count, r.sent_count, r.failed_count, r.started,
      api_timestamp(b.created_at) as created_at,
      api_timestamp(greatest(b.updated_at, r.last_change)) as updated_at
    from batches b cross join lateral (
      select count(*) filter (where status = 'sent')::int as sent_count,
             count(*) filter (where status = 'failed')::int as failed_count,
             coalesce(bool_or(status <> 'queued' or attempts > 0), false) as started,
             max(updated_at) as last_change
      from outbox where batch_id = b.id) r
    where b.id = ${id}
    ${lock ? sql`for update of b` : sql``}`
  return row
}

/**
 * The rulings' states: `pending` until a worker starts on it, `running` until every recipient is
 * handled, then `completed` if at least one was sent, otherwise `failed`.
 */
function asBatch(row: BatchRow): Batch {
  const handled = row.sent_count + row.failed_count
  const done = handled >= row.total_count
  const status = done ? (row.sent_count > 0 ? 'completed' : 'failed') : row.started ? 'running' : 'pending'
  return {
    id: row.id,
    name: row.name,
    status,
    total_count: row.total_count,
    sent_count: row.sent_count,
    failed_count: row.failed_count,
    progress: row.total_count === 0 ? 100 : Math.floor((100 * handled) / row.total_count),
    created_at: row.created_at,
    updated_at: row.updated_at,
  }
}

/** The account's batch; another account's is as missing as one that never was. */
async function ownBatch(sql: Db, accountId: number | null, id: number, lock = false): Promise<BatchRow> {
  const row = await batchRow(sql, id, lock)
  if (!row || (accountId !== null && row.account_id !== accountId)) {
    throw standardError(404, 'BATCH_NOT_FOUND', `No batch with id ${id} on this account`)
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
      throw standardError(
        400,
        'INVALID_STATUS',
        `Batch ${id} is ${batch.status}; only completed or failed batches can be deleted`,
      )
    }
    await tx`
      with gone as (delete from batches where id = ${id} returning temporary_audience_id)
      delete from audiences where id = (select temporary_audience_id from gone)`
  })
}

export interface FailedRecipient {
  outbox_id: number
  email: string
  error: string | null
  attempts: number
  updated_at: string
}

/** `mailroom batch failures <id>`: the batch's failed recipients with their errors. */
export async function batchFailures(sql: Sql, id: number): Promise<FailedRecipient[]> {
  await ownBatch(sql, null, id)
  return sql<FailedRecipient[]>`
    select id as outbox_id, to_addresses[1] as email, error, attempts, api_timestamp(updated_at) as updated_at
    from outbox where batch_id = ${id} and status = 'failed' order by id`
}

/**
 * `mailroom batch retry <id>`: queues the failed recipients again (through the batch's
 * connection when theirs was deleted), which brings the batch back to running.
 */
export async function retryBatch(sql: Sql, id: number): Promise<Batch> {
  return sql.begin(async (tx) => {
    await ownBatch(tx, null, id, true)
    const retried = await tx<{ connection_id: number | null }[]>`
      update outbox o set status = 'queued', error = null, failures = 0, deferrals = 0,
        connection_id = coalesce(o.connection_id, b.connection_id), next_attempt_at = mailroom_now(),
        updated_at = now()
      from batches b
      where b.id = o.batch_id and o.batch_id = ${id} and o.status = 'failed'
      returning o.connection_id`
    if (retried.some((r) => r.connection_id === null)) {
      throw standardError(
        409,
        'CONNECTION_NOT_FOUND',
        `The connection batch ${id} was sent through was deleted`,
      )
    }
    for (const connectionId of new Set(retried.map((r) => r.connection_id as number))) {
      await scheduleQueueRun(tx, connectionId)
    }
    return asBatch(await ownBatch(tx, null, id))
  })
}
