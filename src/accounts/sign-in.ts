import { AppError } from '../app-error.ts'
import { signInRecord } from '../db/passwords.ts'
import { clearAttempts, countAttempt, forgiveAttempt } from '../db/sign-in-attempts.ts'
import type { Db } from '../db/sql.ts'
import { wholeSeconds } from '../quota/limit-reached.ts'
import { counted } from '../wording.ts'
import { verifyPassword } from './passwords.ts'
import { startSession } from './sessions.ts'

/** The specification's example: 10 failed sign-ins in 15 minutes, per address and per client. */
export const SIGN_IN_LIMIT = { attempts: 10, minutes: 15 } as const

export interface SignInAttempt {
  email: string
  password: string
  /** Where the request came from; undefined when unknown (then only the address is throttled). */
  clientAddress: string | undefined
}

/**
 * Checks the email and password and starts a session; returns its token. Every refusal says
 * the same whether the account exists or not, and the attempt is counted before the password
 * is checked, so that a burst of attempts cannot run past the limit.
 */
export async function signIn(db: Db, attempt: SignInAttempt): Promise<{ token: string; accountId: number }> {
  const emailSubject = `email:${attempt.email.trim().toLowerCase()}`
  const clientSubject = attempt.clientAddress === undefined ? undefined : `client:${attempt.clientAddress}`
  const subjects = clientSubject ? [emailSubject, clientSubject] : [emailSubject]
  const tally = await countAttempt(db, subjects, SIGN_IN_LIMIT)
  if (tally.attempts > SIGN_IN_LIMIT.attempts) {
    const retryAfter = wholeSeconds(tally.endsInMs)
    throw new AppError(
      'SIGN_IN_THROTTLED',
      `Too many failed sign-ins. Try again in ${counted(Math.ceil(retryAfter / 60), 'minute')}.`,
      { details: { retryAfter }, waitMs: tally.endsInMs },
    )
  }
  const record = await signInRecord(db, attempt.email.trim())
  const verified = await verifyPassword(attempt.password, record?.hash).catch(async (error) => {
    // Turned away unchecked: not a failed sign-in, or a flood of others' could lock the owner out.
    if (error instanceof AppError && error.code === 'PASSWORD_CHECKS_BUSY') {
      for (const subject of subjects) await forgiveAttempt(db, subject)
    }
    throw error
  })
  if (!verified || !record) {
    throw new AppError('SIGN_IN_FAILED', 'Wrong email or password.')
  }
  await clearAttempts(db, emailSubject)
  if (clientSubject) await forgiveAttempt(db, clientSubject)
  const { token } = await startSession(db, record.account_id)
  return { token, accountId: record.account_id }
}
