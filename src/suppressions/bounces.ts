import type { HardBounce } from '../db/outbox-types.ts'
import { mailboxesGone } from '../smtp/mailbox-gone.ts'
import type { AttemptOutcome } from '../smtp/outcome.ts'
import { suppressionStrength } from './strength.ts'

/**
 * The suppressions an attempt adds: each recipient whose server said its mailbox does not exist
 * becomes a `hard_bounce` of scope `all`, its detail the server's reply. Written by the statement
 * that settles the attempt, so that a crash cannot keep the one and lose the other.
 */
export function hardBouncesOf(outcome: AttemptOutcome): HardBounce[] {
  const strength = suppressionStrength({ reason: 'hard_bounce', scope: 'all' })
  return mailboxesGone(outcome).map((r) => ({ email: r.address, detail: r.reply ?? '', strength }))
}
