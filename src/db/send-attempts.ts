import { type ConnectionRef, namedConnection, refFields, type SendingConnection } from './connections.ts'
import { type Recheck, recheckHolds, recheckJson } from './fast-path.ts'
import { ATTEMPT_LEASE_SECONDS, attemptOfKey, messageColumns } from './outbox-records.ts'
import type { KeyedAttempt, MessageBodies, OutboxMessage } from './outbox-types.ts'
import type { Db, Fragment } from './sql.ts'
import { suppressedAmong } from './suppressions.ts'
import type { LimitRefusal, Limits } from './usage.ts'

/**
 * POST /send's statements before SMTP: what the request finds (its key's earlier attempt, the
 * connection it names) in one round trip, then its attempt claimed and its units taken in
 * another (`mailroom_send_attempts`, src/db/functions/30_mailroom_send_attempts.sql), with those
 * of its connection's other requests then waiting. Its settlement is the outbox's.
 */

export interface SendFindings {
  /** The attempt the request's idempotency key points at, if it has one that does. */
  earlier?: KeyedAttempt
  /** The connection the request names, if it exists. */
  connection?: SendingConnection
}

/** What one request looks for: its key's earlier attempt (when it has a key), its connection. */
export interface FindingsAsked {
  accountId: number
  key: Buffer | null
  ref: ConnectionRef
}

/**
 * For each request, in order, the earlier attempt under its key and the connection it names: one
 * statement for any number of requests (a round of them: src/fast-path/send-statements.ts).
 */
export async function sendFindings(db: Db, asked: FindingsAsked[]): Promise<SendFindings[]> {
  const rows = asked.map(({ accountId, key, ref }) => ({
    account_id: accountId,
    key: key?.toString('hex') ?? null,
    ...refFields(ref),
  }))
  const ref = { id: db`ask.ref_id`, accountId: db`ask.ref_account_id`, address: db`ask.ref_address` }
  const found = await db<{ earlier: KeyedAttempt | null; connection: SendingConnection | null }[]>`
    select
      (select to_jsonb(a) from (${attemptOfKey(db, db`ask.account_id`, db`decode(ask.key, 'hex')`)}) a) as earlier,
      (select to_jsonb(c) from (${namedConnection(db, ref)}) c) as connection
    from rows from (jsonb_to_recordset(${db.json(rows)})
      as (account_id int, key text, ref_id int, ref_account_id int, ref_address text))
      with ordinality as ask(account_id, key, ref_id, ref_account_id, ref_address, n)
    order by n`
  return found.map((row) => ({
    ...(row.earlier ? { earlier: row.earlier } : {}),
    ...(row.connection ? { connection: row.connection } : {}),
  }))
}

export type SendAttempt =
  /** Recorded, `sending`, its units taken in these windows. */
  | { refused: null; id: number; usageDay: string | null; quotaWindow: Date | null }
  /** Another request holds the idempotency key. */
  | { refused: 'key' }
  /** What the attempt's recheck says no longer holds: nothing was taken or recorded. */
  | { refused: 'stale' }
  /** Asked to look, the statement found a recipient suppressed for all mail: nothing was taken or recorded. */
  | { refused: 'suppressed' }
  /** A limit refused: nothing was taken or recorded. */
  | LimitRefusal

/** An attempt about to reach SMTP, with the limits it counts against. */
export interface AttemptToRecord {
  attempt: OutboxMessage &
    MessageBodies & { idempotencyKey: Buffer | null; recheck?: Recheck; suppressible?: boolean }
  limits: Limits
}

/** Every recipient of the attempt `e.a` (its JSON, under the outbox's column names), as a text[]. */
function envelopeOfAttempt(db: Db): Fragment {
  return db`array(select jsonb_array_elements_text(
    (e.a->'to_addresses') || (e.a->'cc_addresses') || (e.a->'bcc_addresses')))`
}

/** PostgreSQL's SQLSTATE for a transaction it aborted to break a deadlock. */
const DEADLOCK_DETECTED = '40P01'

/**
 * Records attempts about to reach SMTP through the connection of `limits`, all counting against
 * them, as one at a time in the order given would: each under its idempotency key, then
 * taking one unit of each limit (mailroom_take_units); an attempt a limit refuses is not
 * recorded, nor one whose recheck no longer holds. One statement: a round of the connection's
 * concurrent requests.
 *
 * A round holds what each of its attempts took until it commits, so two rounds reusing each
 * other's idempotency keys (through two connections of an account) can deadlock, where one
 * attempt at a time could not. PostgreSQL then aborts one round, which took nothing, and its
 * attempts are recorded each in a statement of its own.
 */
export async function recordSendAttempts(
  db: Db,
  limits: Limits,
  attempts: AttemptToRecord['attempt'][],
): Promise<SendAttempt[]> {
  try {
    return await recordInOneStatement(db, limits, attempts)
  } catch (error) {
    if (attempts.length === 1 || (error as { code?: unknown }).code !== DEADLOCK_DETECTED) throw error
    const alone = attempts.map((attempt) => recordInOneStatement(db, limits, [attempt]).then(([one]) => one))
    return (await Promise.all(alone)) as SendAttempt[]
  }
}

async function recordInOneStatement(
  db: Db,
  limits: Limits,
  attempts: AttemptToRecord['attempt'][],
): Promise<SendAttempt[]> {
  const args = attempts.map(({ recheck, suppressible, ...attempt }) => ({
    ...messageColumns(attempt),
    key: attempt.idempotencyKey?.toString('hex') ?? null,
    ...(suppressible && { suppressible }),
    ...(recheck === undefined ? {} : { recheck: recheckJson(recheck) }),
  }))
  const holds = recheckHolds(
    db,
    db`e.a->'recheck'`,
    db`${limits.accountId}::int`,
    db`${limits.connectionId}::int`,
  )
  const rows = await db<
    {
      attempt_id: number | null
      refused: 'key' | 'stale' | 'suppressed' | LimitRefusal['refused'] | null
      day_taken: string | null
      window_taken: Date | null
      limit_used: number | null
      wait_ms: number | null
      resets_at: Date | null
    }[]
  >`
    with asked as materialized (
      select e.a, e.n, (not (e.a ? 'recheck') or coalesce(${holds}, false)) as holds,
        (e.a ? 'suppressible' and exists (${suppressedAmong(db, limits.accountId, envelopeOfAttempt(db))})) as suppressed
      from jsonb_array_elements(${db.json(args)}) with ordinality as e(a, n)
    ), held as materialized (
      select a, n, row_number() over (order by n)::int as ord from asked where holds and not suppressed
    ), attempted as materialized (
      select * from mailroom_send_attempts(${limits.accountId}::int, ${limits.connectionId}::int,
        (select coalesce(jsonb_agg(a order by n), '[]'::jsonb) from held),
        ${ATTEMPT_LEASE_SECONDS}::int, ${limits.dailyLimit}::int,
        ${limits.quota?.quota ?? null}::int, ${limits.quota?.period ?? null}::text, ${limits.bucket.capacity}::float8,
        ${limits.bucket.perSecond}::float8)
    )
    select h.n, t.attempt_id, t.refused, t.day_taken::text, t.window_taken, t.limit_used, t.wait_ms, t.resets_at
    from attempted t join held h on h.ord = t.ord
    union all
    select n, null, case when holds then 'suppressed' else 'stale' end, null, null, null, null, null
    from asked where not holds or suppressed
    order by n`
  if (rows.length !== attempts.length)
    throw new Error('mailroom_send_attempts did not answer a row per attempt')
  return rows.map((row): SendAttempt => {
    if (row.refused === null) {
      if (row.attempt_id === null) throw new Error('mailroom_send_attempts recorded no attempt')
      return { refused: null, id: row.attempt_id, usageDay: row.day_taken, quotaWindow: row.window_taken }
    }
    if (row.refused === 'key' || row.refused === 'stale' || row.refused === 'suppressed') {
      return { refused: row.refused }
    }
    return {
      refused: row.refused,
      used: row.limit_used ?? 0,
      waitMs: row.wait_ms ?? 1000,
      resetsAt: row.resets_at,
    }
  })
}
