import { queueRunRequest } from './jobs.ts'
import { batchEndEvent, EVENT_COLUMNS, emailEvents } from './outbox-records.ts'
import type { Db, Sql } from './sql.ts'
import { eventsRecorded, recordedEvents } from './webhooks.ts'

/**
 * Changing one's mind: canceling an email or a batch, moving a scheduled email. Each decides in
 * one statement whose guard is the record's status (queued, never tried): the queue's claim takes
 * records under the same guard, so that of a cancel and a claim at the same moment exactly one
 * wins, and a crash at any moment leaves the record either as it was or changed whole.
 */

/** Queued (scheduled or due) and never tried: what a cancel may still stop (see isCancelable). */
const cancelable = (db: Db) => db`status = 'queued' and attempts = 0`

/**
 * Cancels the account's email `id` when nothing has tried it yet, with its email.canceled event
 * and, when it was the last of its batch still to go, the batch's end. False when it was not
 * canceled (no such email, or no longer cancelable).
 */
export async function cancelEmailRow(db: Db, accountId: number, id: number): Promise<boolean> {
  const [row] = await db<{ canceled: number }[]>`
    with record as (
      update outbox set status = 'canceled', next_attempt_at = null, updated_at = mailroom_now()
      where id = ${id} and account_id = ${accountId} and ${cancelable(db)}
      returning ${EVENT_COLUMNS(db)}
    ), settled_batches as (
      select batch_id, array_agg(id) as ids, array_agg(status) as statuses from record
      where batch_id is not null group by batch_id
    ), ${recordedEvents(db, db`${emailEvents(db, db`record`)} union all ${batchEndEvent(db, db`settled_batches`)}`)}
    select (select count(*) from record)::int as canceled, ${eventsRecorded(db)} as recorded`
  return (row?.canceled ?? 0) > 0
}

/**
 * Moves the account's scheduled email `id` to `at`, and asks for a run of its connection's queue
 * (which, with nothing due, asks for its next when the earliest is), in one transaction: a move
 * to an earlier time is never left without the run that sends it. False when it was not moved
 * (no such email, or no longer scheduled).
 */
export function rescheduleEmailRow(sql: Sql, accountId: number, id: number, at: Date): Promise<boolean> {
  return sql.begin(async (tx) => {
    const [row] = await tx<{ connection_id: number | null }[]>`
      update outbox set scheduled_at = ${at}, next_attempt_at = ${at}, updated_at = mailroom_now()
      where id = ${id} and account_id = ${accountId} and ${cancelable(tx)}
        and scheduled_at > mailroom_now()
      returning connection_id`
    if (!row) return false
    if (row.connection_id !== null) await tx`${queueRunRequest(tx, row.connection_id)}`
    return true
  })
}

/**
 * Cancels the batch `batchId`, locked by the caller: its recipients not yet moved into the outbox
 * are dropped from its store, its records nothing has tried yet are canceled (each with its
 * email.canceled event), and the batch keeps when it was canceled, with its batch.canceled event.
 * A record being sent finishes its attempt; one waiting for a retry keeps its schedule.
 */
export async function cancelBatchRows(tx: Db, batchId: number): Promise<void> {
  await tx`
    with batch as (
      update batches set canceled_at = mailroom_now(), updated_at = mailroom_now()
      where id = ${batchId}
      returning id, account_id, name, total_count
    ), dropped as (
      delete from batch_recipients where batch_id = ${batchId}
    ), record as (
      update outbox set status = 'canceled', next_attempt_at = null, updated_at = mailroom_now()
      where batch_id = ${batchId} and ${cancelable(tx)}
      returning ${EVENT_COLUMNS(tx)}
    ), ended as (
      select b.account_id, 'batch.canceled'::text as type, jsonb_build_object(
        'batch_id', b.id, 'name', b.name, 'status', 'canceled', 'total_count', b.total_count,
        'sent_count', (select count(*) from outbox o where o.batch_id = b.id and o.status = 'sent'),
        'failed_count', (select count(*) from outbox o where o.batch_id = b.id and o.status = 'failed')) as data
      from batch b
    ), ${recordedEvents(tx, tx`${emailEvents(tx, tx`record`)} union all select * from ended`)}
    -- The store's deletion runs unreferenced, as every data-modifying WITH does.
    select ${eventsRecorded(tx)}`
}
