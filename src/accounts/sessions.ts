import { createHash, createHmac, randomBytes } from 'node:crypto'
import {
  deleteEndedSessions,
  deleteSession,
  insertSession,
  type SessionLifetime,
  setFlash,
  useSession,
} from '../db/sessions.ts'
import type { Db } from '../db/sql.ts'
import type { Plan } from '../plans.ts'

/** The specification's lifetime: 30 days from sign-in, or 24 hours without use. */
export const SESSION_LIFETIME: SessionLifetime = { maxDays: 30, idleHours: 24 }

/** 32 random bytes (256 bits) in base64url. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/

export interface Session {
  id: number
  accountId: number
  email: string
  plan: Plan
  /** The message left for this page, if it was asked for and there was one. */
  flash: string | null
}

function sha256(token: string): Buffer {
  return createHash('sha256').update(token).digest()
}

/** A new session for the account, and its token, which only the browser keeps. */
export async function startSession(db: Db, accountId: number): Promise<{ token: string; sessionId: number }> {
  const token = randomBytes(32).toString('base64url')
  await deleteEndedSessions(db, accountId, SESSION_LIFETIME)
  return { token, sessionId: await insertSession(db, accountId, sha256(token)) }
}

/** The live session the token belongs to (now marked used), or undefined. */
export async function resumeSession(
  db: Db,
  token: string | undefined,
  options: { takeFlash: boolean },
): Promise<Session | undefined> {
  if (!token || !TOKEN.test(token)) return undefined
  const row = await useSession(db, sha256(token), SESSION_LIFETIME, options.takeFlash)
  return row && { id: row.id, accountId: row.account_id, email: row.email, plan: row.plan, flash: row.flash }
}

export async function endSession(db: Db, token: string | undefined): Promise<void> {
  if (token && TOKEN.test(token)) await deleteSession(db, sha256(token))
}

/** A message for the session's next page (what an action did, shown after its redirect). */
export function leaveMessage(db: Db, sessionId: number, message: string): Promise<void> {
  return setFlash(db, sessionId, message)
}

/**
 * The session's form token: derived from its secret token, so that a page of another site,
 * which cannot read the cookie, cannot know it, and nothing more needs storing.
 */
export function formToken(token: string): string {
  return createHmac('sha256', token).update('mailroom form token').digest('base64url')
}
