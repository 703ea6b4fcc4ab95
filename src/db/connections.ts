import type { Plan } from '../plans.ts'
import type { Db, Fragment } from './sql.ts'

/** The connections table: every statement that reads or writes it. */

export const QUOTA_PERIODS = ['day', 'hour'] as const
export type QuotaPeriod = (typeof QUOTA_PERIODS)[number]
export type SmtpPort = 465 | 587 | 2525
export type ConnectionStatus = 'active' | 'disabled' | 'paused'
/** Who paused a connection (the `paused_by` column, src/db/migrations/008_recipient_outcomes.sql). */
export type PausedBy = 'operator' | 'pushback' | 'unreachable'

/** A connection as the operator sees it; the password never leaves the database. */
export interface ConnectionView {
  id: number
  account_id: number
  from: string
  host: string
  port: SmtpPort
  username: string
  quota: number | null
  quota_period: QuotaPeriod | null
  rate: number
  is_default: boolean
  status: ConnectionStatus
  paused_until: string | null
  /** While paused: who paused it, and the provider's last reply when the service did. */
  paused_by: PausedBy | null
  pause_reason: string | null
  created_at: string
  updated_at: string
}

const VIEW_COLUMNS = (db: Db) => db`
  id, account_id, from_address as "from", host, port, username, quota, quota_period, rate, is_default,
  case when disabled then 'disabled' when paused_until > mailroom_now() then 'paused' else 'active' end as status,
  case when paused_until > mailroom_now() then api_timestamp(paused_until) end as paused_until,
  case when paused_until > mailroom_now() then paused_by end as paused_by,
  case when paused_until > mailroom_now() then pause_reason end as pause_reason,
  api_timestamp(created_at) as created_at, api_timestamp(updated_at) as updated_at`

/** Everything a send needs of its connection, read in one query. */
export interface SendingConnection {
  id: number
  account_id: number
  from_address: string
  host: string
  port: SmtpPort
  username: string
  password_encrypted: string
  quota: number | null
  quota_period: QuotaPeriod | null
  rate: number
  disabled: boolean
  paused: boolean
  is_default: boolean
}

/** A connection as its queue's runs send through it, with its account's plan. */
export type QueueConnection = SendingConnection & { plan: Plan }

const SENDING_COLUMNS = (db: Db) => db`
  id, account_id, from_address, host, port, username, password_encrypted, quota, quota_period, rate,
  disabled, coalesce(paused_until > mailroom_now(), false) as paused, is_default`

/**
 * When the connection row `c` holds its queue until: the end of a pause, of a push-back back-off
 * or of a wait for its server to answer (null when none is set; each may be past).
 */
export function heldUntil(db: Db): Fragment {
  return db`greatest(c.paused_until, c.queue_backoff_until, c.unreachable_until)`
}

/**
 * A condition on the connection row `c`: it may send now (not disabled, not paused, not backing
 * off after push-back, not waiting for its server to answer).
 */
export function mayGoNow(db: Db): Fragment {
  return db`not c.disabled and not coalesce(${heldUntil(db)} > mailroom_now(), false)`
}

export interface NewConnection {
  accountId: number
  from: string
  host: string
  port: SmtpPort
  username: string
  passwordSealed: string
  quota: { quota: number; per: QuotaPeriod } | null
  rate: number
}

/** What an account's connections say about a new one: how many exist, and whether `from` is taken. */
export async function connectionCount(
  db: Db,
  accountId: number,
  from: string,
): Promise<{ used: number; taken: boolean }> {
  const [row] = await db<{ used: number; taken: boolean }[]>`
    select count(*)::int as used, coalesce(bool_or(lower(from_address) = lower(${from})), false) as taken
    from connections where account_id = ${accountId}`
  return row ?? { used: 0, taken: false }
}

/** The first connection of an account becomes its default. */
export async function insertConnection(db: Db, c: NewConnection): Promise<ConnectionView> {
  const [row] = await db<ConnectionView[]>`
    insert into connections (account_id, from_address, host, port, username, password_encrypted,
                             quota, quota_period, rate, is_default)
    values (${c.accountId}, ${c.from}, ${c.host}, ${c.port}, ${c.username}, ${c.passwordSealed},
            ${c.quota?.quota ?? null}, ${c.quota?.per ?? null}, ${c.rate},
            not exists (select 1 from connections where account_id = ${c.accountId}))
    returning ${VIEW_COLUMNS(db)}`
  if (!row) throw new Error('the connection was not recorded')
  return row
}

export function selectConnections(db: Db, accountId: number): Promise<ConnectionView[]> {
  return db<ConnectionView[]>`
    select ${VIEW_COLUMNS(db)} from connections where account_id = ${accountId} order by id`
}

export async function connectionLogin(
  db: Db,
  id: number,
): Promise<{ host: string; port: SmtpPort; username: string } | undefined> {
  const [row] = await db<{ host: string; port: SmtpPort; username: string }[]>`
    select host, port, username from connections where id = ${id}`
  return row
}

/** A change to a connection (see the setters below); undefined when there is no such connection. */
export async function changeConnection(
  db: Db,
  id: number,
  change: Fragment,
): Promise<ConnectionView | undefined> {
  const [row] = await db<ConnectionView[]>`
    update connections set ${change}, updated_at = mailroom_now() where id = ${id} returning ${VIEW_COLUMNS(db)}`
  return row
}

export interface SettingsChange {
  /** undefined: unchanged; null: no quota. */
  quota?: { quota: number; per: QuotaPeriod } | null
  rate?: number
  passwordSealed?: string
}

export function settings(db: Db, change: SettingsChange): Fragment {
  const { quota, rate, passwordSealed } = change
  return db`
    quota = ${quota === undefined ? db`quota` : (quota?.quota ?? null)},
    quota_period = ${quota === undefined ? db`quota_period` : (quota?.per ?? null)},
    rate = ${rate ?? db`rate`},
    password_encrypted = ${passwordSealed ?? db`password_encrypted`}`
}

export function disabled(db: Db, value: boolean): Fragment {
  return db`disabled = ${value}`
}

/** Paused for `minutes`, or until resumed (no duration). */
export function pausedFor(db: Db, minutes: number | undefined): Fragment {
  const until =
    minutes === undefined
      ? db`'infinity'::timestamptz`
      : db`mailroom_now() + make_interval(mins => ${minutes})`
  return db`paused_until = ${until}, paused_by = 'operator', pause_reason = null`
}

/** Resumed by hand: no pause, no back-off, no wait for the server, no failure streak. */
export function resumed(db: Db): Fragment {
  return db`paused_until = null, paused_by = null, pause_reason = null, queue_backoff_until = null,
    unreachable_until = null, consecutive_failures = 0, pause_streak = 0`
}

/**
 * Deletes a connection; when it was the default, the oldest remaining one takes its place.
 * Undefined when there was no such connection.
 */
export async function deleteConnectionRow(
  tx: Db,
  id: number,
): Promise<{ newDefaultId: number | null } | undefined> {
  const [gone] = await tx<{ account_id: number; is_default: boolean }[]>`
    delete from connections where id = ${id} returning account_id, is_default`
  if (!gone) return undefined
  const [next] = gone.is_default
    ? await tx<{ id: number }[]>`
        update connections set is_default = true, updated_at = mailroom_now()
        where id = (select id from connections where account_id = ${gone.account_id} order by created_at, id limit 1)
        returning id`
    : await tx<
        { id: number }[]
      >`select id from connections where account_id = ${gone.account_id} and is_default`
  return { newDefaultId: next?.id ?? null }
}

/** True when the account has a connection with that id. */
export async function ownsConnection(db: Db, accountId: number, connectionId: number): Promise<boolean> {
  const [own] = await db`select 1 from connections where id = ${connectionId} and account_id = ${accountId}`
  return own !== undefined
}

/**
 * Which connection a send names (the rules that pick it are connections/selection.ts'): the one a
 * key is scoped to, the account's one with an address (case-insensitive), or its default.
 */
export type ConnectionRef = { id: number } | { accountId: number; address: string } | { accountId: number }

/**
 * A ConnectionRef in SQL: the connection's id, else the account and (if any) the address, the
 * others null. Values, or columns of a row in scope where namedConnection is nested.
 */
export interface RefInSql {
  id: Fragment
  accountId: Fragment
  address: Fragment
}

/** A ConnectionRef's three fields, those it does not use null, named as a statement reads them. */
export function refFields(ref: ConnectionRef) {
  return {
    ref_id: 'id' in ref ? ref.id : null,
    ref_account_id: 'accountId' in ref ? ref.accountId : null,
    ref_address: 'address' in ref ? ref.address : null,
  }
}

export function refValues(db: Db, ref: ConnectionRef): RefInSql {
  const { ref_id, ref_account_id, ref_address } = refFields(ref)
  return { id: db`${ref_id}::int`, accountId: db`${ref_account_id}::int`, address: db`${ref_address}::text` }
}

/**
 * The connection `ref` names, as a query to run or to nest in another: each way of naming it is
 * a branch of its own, so that each finds the connection through its index.
 */
export function namedConnection(db: Db, ref: RefInSql): Fragment {
  return db`
    select ${SENDING_COLUMNS(db)} from connections where id = ${ref.id}
    union all
    select ${SENDING_COLUMNS(db)} from connections
    where ${ref.id} is null and ${ref.address} is not null
      and account_id = ${ref.accountId} and lower(from_address) = lower(${ref.address})
    union all
    select ${SENDING_COLUMNS(db)} from connections
    where ${ref.id} is null and ${ref.address} is null and account_id = ${ref.accountId} and is_default`
}

/** The connection `id` as a send reads it now (as namedConnection does), in JSON: for comparing. */
export function sendingConnectionNow(db: Db, id: Fragment): Fragment {
  return db`(select to_jsonb(c) from (select ${SENDING_COLUMNS(db)} from connections where id = ${id}) c)`
}

export async function connectionNamed(db: Db, ref: ConnectionRef): Promise<SendingConnection | undefined> {
  const [row] = await db<SendingConnection[]>`${namedConnection(db, refValues(db, ref))}`
  return row
}

export async function queueConnection(db: Db, id: number): Promise<QueueConnection | undefined> {
  const [row] = await db<QueueConnection[]>`
    select ${SENDING_COLUMNS(db)}, (select plan from accounts a where a.id = c.account_id) as plan
    from connections c where id = ${id}`
  return row
}

export interface PauseRule {
  failuresBeforePause: number
  firstPauseMinutes: number
  longestPauseMinutes: number
}

export interface ProviderFailure {
  kind: 'pushback' | 'unreachable'
  reason: string
  /** The wait this failure causes (a back-off, a Retry-After): failures within it count once. */
  windowMs: number
}

/**
 * Counts a provider failure, unless it comes within the window of the last one counted
 * (messages failing side by side in one outage are one failure). The `failuresBeforePause`-th
 * in a row pauses the connection for `firstPauseMinutes`, doubling with each pause of a streak
 * up to `longestPauseMinutes`, noting why.
 */
export async function countProviderFailure(
  db: Db,
  id: number,
  rule: PauseRule,
  failure: ProviderFailure,
): Promise<{ pausedNow: boolean; counted: boolean }> {
  // Decided on the row as it was (RETURNING sees it updated).
  const counts = db`coalesce(was.failure_window_until <= mailroom_now(), true)`
  const pauses = db`(${counts} and was.consecutive_failures + 1 >= ${rule.failuresBeforePause})`
  const [row] = await db<{ paused_now: boolean; counted: boolean }[]>`
    with was as (select consecutive_failures, failure_window_until from connections where id = ${id} for update)
    update connections c set
      consecutive_failures = case when ${pauses} then 0 when ${counts} then was.consecutive_failures + 1
                                  else was.consecutive_failures end,
      failure_window_until = case when ${counts}
        then mailroom_now() + ${failure.windowMs} * interval '1 millisecond' else was.failure_window_until end,
      paused_until = case when ${pauses}
        then mailroom_now() + make_interval(mins => least(
          ${rule.firstPauseMinutes} * power(2, least(c.pause_streak, 10))::int, ${rule.longestPauseMinutes}))
        else c.paused_until end,
      paused_by = case when ${pauses} then ${failure.kind} else c.paused_by end,
      pause_reason = case when ${pauses} then ${failure.reason} else c.pause_reason end,
      pause_streak = case when ${pauses} then c.pause_streak + 1 else c.pause_streak end
    from was
    where c.id = ${id}
    returning ${pauses} as paused_now, ${counts} as counted`
  return { pausedNow: row?.paused_now ?? false, counted: row?.counted ?? false }
}

/**
 * The queue waits for the server until `inMs` from now (a later wait set before stands): the
 * connection is taken for out of reach until a probe finds it answering.
 */
export async function waitForServer(db: Db, id: number, inMs: number): Promise<void> {
  await db`
    update connections set unreachable_until = greatest(
      unreachable_until, mailroom_now() + ${Math.max(0, Math.ceil(inMs))} * interval '1 millisecond')
    where id = ${id}`
}

/**
 * A connection whose server is taken for out of reach (see waitForServer; paused as out of
 * reach included), as a probe needs it, with whether it is paused; undefined otherwise.
 */
export async function outOfReach(db: Db, id: number): Promise<SendingConnection | undefined> {
  const [row] = await db<SendingConnection[]>`
    select ${SENDING_COLUMNS(db)} from connections where id = ${id} and unreachable_until is not null`
  return row
}

/**
 * The server answered a probe: the wait for it ends, and so does a pause it caused (the streak
 * stays, so a relapse pauses longer). False when it was not taken for out of reach.
 */
export async function endOutage(db: Db, id: number): Promise<boolean> {
  const ended = await db`
    update connections set unreachable_until = null, consecutive_failures = 0, failure_window_until = null,
      paused_until = case when paused_by = 'unreachable' then null else paused_until end,
      pause_reason = case when paused_by = 'unreachable' then null else pause_reason end,
      paused_by = case when paused_by = 'unreachable' then null else paused_by end, updated_at = mailroom_now()
    where id = ${id} and unreachable_until is not null`
  return ended.count > 0
}

/** A delivered message ends the connection's failure streak: a statement to ride with the outbox's. */
export function clearFailures(db: Db, id: number): Fragment {
  return db`
    update connections set consecutive_failures = 0, failure_window_until = null, pause_streak = 0
    where id = ${id} and (consecutive_failures <> 0 or pause_streak <> 0)`
}

/** Push-back: the connection's queue waits `delayMs` before it tries any message again. */
export async function holdQueue(db: Db, id: number, delayMs: number): Promise<void> {
  await db`
    update connections set queue_backoff_until = greatest(
      coalesce(queue_backoff_until, '-infinity'), mailroom_now() + ${delayMs} * interval '1 millisecond')
    where id = ${id}`
}
