/**
 * The line of password hashes is bounded: a sign-in that finds it full is turned away at once
 * with "try again in a moment" (429, Retry-After), not counted as a failed sign-in; one place
 * short of full, it waits its turn and signs in.
 */
import { expect, it } from 'vitest'
import { HASH_SLOTS, verifyPassword } from '../../src/accounts/passwords.ts'
import { useTestApp } from '../support/app.ts'
import { accountWithPassword, client, expectRedirect, textOf } from '../support/dashboard.ts'

const app = useTestApp({ trustProxy: true })
const PASSWORD = 'a long enough password'
const CLIENT = '192.0.2.77'
/** A dozen scrypt hashes, one at a time, on a loaded two-core machine. */
const HASHES_TIMEOUT = 120_000

/** `count` password checks that take their place in the line at once (and fail). */
function othersHashing(count: number): Promise<boolean[]> {
  return Promise.all(Array.from({ length: count }, () => verifyPassword('someone else’s guess', undefined)))
}

it(
  'turns a sign-in away while the line of password checks is full, and lets it wait one place short of full',
  async () => {
    const account = await accountWithPassword(app, PASSWORD)
    const browser = client(app, { 'x-forwarded-for': CLIENT })
    await browser.get('/dashboard/login')
    const signIn = () =>
      browser.post('/dashboard/login', { email: account.email, password: PASSWORD, next: '' })

    const full = othersHashing(HASH_SLOTS.running + HASH_SLOTS.waiting)
    const busy = await signIn()
    expect(busy.status).toBe(429)
    expect(busy.headers.get('retry-after')).toBe('1')
    expect(textOf(busy.html)).toContain(
      'Too many passwords are being checked at the moment. Try again in a moment.',
    )
    expect(busy.headers.getSetCookie().some((line) => line.startsWith('mailroom_session='))).toBe(false)
    // Not a failed sign-in: neither the address nor the client is any closer to the throttle.
    const counted = await app.services.sql<{ attempts: number }[]>`
      select attempts from sign_in_attempts
      where subject in (${`email:${account.email.toLowerCase()}`}, ${`client:${CLIENT}`})`
    expect(counted.every((row) => row.attempts === 0)).toBe(true)
    await full

    const almostFull = othersHashing(HASH_SLOTS.running + HASH_SLOTS.waiting - 1)
    expectRedirect(await signIn(), '/dashboard')
    await almostFull
  },
  HASHES_TIMEOUT,
)
