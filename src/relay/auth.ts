import { attemptsOf, countAttempt } from '../db/sign-in-attempts.ts'
import type { Caller } from '../keys/caller.ts'
import { authenticate } from '../keys/keys.ts'
import type { Services } from '../services.ts'
import { counted } from '../wording.ts'
import { SmtpReply } from './replies.ts'

/**
 * Failed AUTH attempts one client address may make in a window, counted as dashboard sign-ins
 * are (docs/decisions.md, "The SMTP relay"): an app with a wrong key retries without end, and a
 * key cannot be guessed, so the limit guards the database rather than the keys.
 */
export const RELAY_AUTH_LIMIT = { attempts: 10, minutes: 15 } as const

/**
 * The caller an AUTH password (an API key) speaks for. Only a wrong key is counted: an app that
 * opens many sessions at once with its right key must not find its own sessions throttling it.
 * Wrong keys arriving together may each pass the check before any is counted, so an address
 * can go past the limit by the sessions it holds at once (MAILROOM_SMTP_SESSIONS_PER_ADDRESS),
 * which a key of 256 random bits makes harmless.
 */
export async function authenticateClient(
  services: Pick<Services, 'sql' | 'metrics'>,
  clientAddress: string,
  password: string,
): Promise<Caller> {
  const subject = `smtp-client:${clientAddress}`
  const tally = await attemptsOf(services.sql, subject, RELAY_AUTH_LIMIT)
  if (tally.attempts >= RELAY_AUTH_LIMIT.attempts) {
    services.metrics.relayAuthFailure('throttled')
    const minutes = Math.max(1, Math.ceil(tally.endsInMs / 60_000))
    throw new SmtpReply(
      454,
      '4.7.0',
      `Too many failed AUTH attempts from this address; try again in ${counted(minutes, 'minute')}`,
    )
  }
  const caller = await authenticate(services.sql, password)
  if (!caller) {
    await countAttempt(services.sql, [subject], RELAY_AUTH_LIMIT)
    services.metrics.relayAuthFailure('invalid_key')
    throw new SmtpReply(535, '5.7.8', 'Authentication failed: the password must be a valid API key')
  }
  return caller
}
