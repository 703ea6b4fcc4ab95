import type { Db, Fragment } from './sql.ts'

/**
 * The bytes of messages submitted as they are to go (table outbox_raw_slices): kept in slices,
 * so that no row holds a whole large message, until their record is purged (on delete cascade).
 */

/** The largest slice a row holds. */
const SLICE_BYTES = 1024 * 1024

/** Stores the bytes record `outboxId` goes as; run in the transaction that queues it. */
export async function storeRawMessage(db: Db, outboxId: number, raw: Buffer): Promise<void> {
  const rows: { outbox_id: number; position: number; content: Buffer }[] = []
  for (let at = 0; at < raw.length || rows.length === 0; at += SLICE_BYTES) {
    rows.push({ outbox_id: outboxId, position: rows.length + 1, content: raw.subarray(at, at + SLICE_BYTES) })
  }
  await db`insert into outbox_raw_slices ${db(rows, 'outbox_id', 'position', 'content')}`
}

/** Record `o`'s bytes whole, null for a message composed from its fields. */
export function rawMessage(db: Db, o: Fragment): Fragment {
  return db`case when ${o}.raw_size is not null then
    (select string_agg(r.content, ''::bytea order by r.position) from outbox_raw_slices r where r.outbox_id = ${o}.id)
  end`
}
