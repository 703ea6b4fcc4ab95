import type { Plan } from '../plans.ts'
import type { Db } from './sql.ts'

/** The sessions table: signed-in browsers, known by the SHA-256 of their token. */

export interface SessionLifetime {
  /** From sign-in, whatever the use. */
  maxDays: number
  /** Without a request. */
  idleHours: number
}

export interface SessionRow {
  id: number
  account_id: number
  email: string
  plan: Plan
  /** The message left for this page, taken (read once) when asked to. */
  flash: string | null
}

export async function insertSession(db: Db, accountId: number, tokenSha256: Buffer): Promise<number> {
  const [row] = await db<{ id: number }[]>`
    insert into sessions (account_id, token_sha256) values (${accountId}, ${tokenSha256}) returning id`
  if (!row) throw new Error('the session was not recorded')
  return row.id
}

/**
 * The live session with that token hash, marked used now; `takeFlash` also takes its message.
 * Undefined when there is none, or it outlived its lifetime.
 */
export async function useSession(
  db: Db,
  tokenSha256: Buffer,
  lifetime: SessionLifetime,
  takeFlash: boolean,
): Promise<SessionRow | undefined> {
  const [row] = await db<SessionRow[]>`
    with live as (
      select id, flash from sessions
      where token_sha256 = ${tokenSha256}
        and created_at > mailroom_now() - make_interval(days => ${lifetime.maxDays})
        and last_used_at > mailroom_now() - make_interval(hours => ${lifetime.idleHours})
      for update
    )
    update sessions s set last_used_at = mailroom_now(), flash = ${takeFlash ? null : db`s.flash`}
    from live, accounts a
    where s.id = live.id and a.id = s.account_id
    returning s.id, s.account_id, a.email, a.plan, ${takeFlash ? db`live.flash` : db`null::text`} as flash`
  return row
}

export async function setFlash(db: Db, sessionId: number, message: string): Promise<void> {
  await db`update sessions set flash = ${message} where id = ${sessionId}`
}

export async function deleteSession(db: Db, tokenSha256: Buffer): Promise<void> {
  await db`delete from sessions where token_sha256 = ${tokenSha256}`
}

export async function deleteSessionsOf(db: Db, accountId: number): Promise<void> {
  await db`delete from sessions where account_id = ${accountId}`
}

/** Sessions past their lifetime are only rows: dropped when their account signs in again. */
export async function deleteEndedSessions(
  db: Db,
  accountId: number,
  lifetime: SessionLifetime,
): Promise<void> {
  await db`
    delete from sessions
    where account_id = ${accountId}
      and (created_at <= mailroom_now() - make_interval(days => ${lifetime.maxDays})
           or last_used_at <= mailroom_now() - make_interval(hours => ${lifetime.idleHours}))`
}
