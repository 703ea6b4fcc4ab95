import { type ConnectionRef, namedConnection, type SendingConnection } from './connections.ts'
import {
  ATTEMPT_LEASE_SECONDS,
  attemptOfKey,
  type KeyedAttempt,
  type MessageBodies,
  type OutboxMessage,
} from './outbox.ts'
import type { Db } from './sql.ts'
import type { LimitRefusal, Limits } from './usage.ts'

/**
 * POST /send's statements before SMTP: what the request finds (its key's earlier attempt, the
 * connection it names) in one round trip, then its attempt claimed and its units taken in
 * another (migration 016). Its settlement is the outbox's.
 */

export interface SendFindings {
  /** The attempt the request's idempotency key points at, if it has one that does. */
  earlier?: KeyedAttempt
  /** The connection the request names, if it exists. */
  connection?: SendingConnection
}

/** The earlier attempt under `key` (when there is a key) and the connection `ref` names, at once. */
export async function sendFindings(
  db: Db,
  accountId: number,
  key: Buffer | null,
  ref: ConnectionRef,
): Promise<SendFindings> {
  const earlier =
    key === null ? db`null::jsonb` : db`(select to_jsonb(a) from (${attemptOfKey(db, accountId, key)}) a)`
  const [row] = await db<{ earlier: KeyedAttempt | null; connection: SendingConnection | null }[]>`
    select ${earlier} as earlier, (select to_jsonb(c) from (${namedConnection(db, ref)}) c) as connection`
  return {
    ...(row?.earlier ? { earlier: row.earlier } : {}),
    ...(row?.connection ? { connection: row.connection } : {}),
  }
}

export type SendAttempt =
  /** Recorded, `sending`, its units taken in these windows. */
  | { refused: null; id: number; usageDay: string | null; quotaWindow: Date | null }
  /** Another request holds the idempotency key. */
  | { refused: 'key' }
  /** A limit refused: nothing was taken or recorded. */
  | LimitRefusal

/**
 * Records an attempt about to reach SMTP under its idempotency key, then takes one unit of each
 * limit (mailroom_take_units); a limit that refuses leaves nothing recorded. One statement.
 */
export async function recordSendAttempt(
  db: Db,
  attempt: OutboxMessage & MessageBodies & { idempotencyKey: Buffer | null },
  limits: Limits,
): Promise<SendAttempt> {
  const [row] = await db<
    {
      attempt_id: number | null
      refused: 'key' | LimitRefusal['refused'] | null
      day_taken: string | null
      window_taken: Date | null
      limit_used: number | null
      wait_ms: number | null
      resets_at: Date | null
    }[]
  >`
    select attempt_id, refused, day_taken::text, window_taken, limit_used, wait_ms, resets_at
    from mailroom_send_attempt(
      ${attempt.accountId}::int, ${attempt.connectionId}::int, ${attempt.from}::text, ${attempt.to}::text[],
      ${attempt.cc}::text[], ${attempt.bcc}::text[], ${attempt.subject}::text, ${attempt.text_body ?? null}::text,
      ${attempt.html_body ?? null}::text, ${attempt.messageId}::text, ${attempt.idempotencyKey}::bytea,
      ${ATTEMPT_LEASE_SECONDS}::int, ${limits.dailyLimit}::int, ${limits.quota?.quota ?? null}::int,
      ${limits.quota?.period ?? null}::text, ${limits.bucket.capacity}::float8, ${limits.bucket.perSecond}::float8)`
  if (!row) throw new Error('mailroom_send_attempt answered no row')
  if (row.refused === null) {
    if (row.attempt_id === null) throw new Error('mailroom_send_attempt recorded no attempt')
    return { refused: null, id: row.attempt_id, usageDay: row.day_taken, quotaWindow: row.window_taken }
  }
  if (row.refused === 'key') return { refused: 'key' }
  return {
    refused: row.refused,
    used: row.limit_used ?? 0,
    waitMs: row.wait_ms ?? 1000,
    resetsAt: row.resets_at,
  }
}
