import { AppError } from '../app-error.ts'
import { countPublicSubmission } from '../db/public-submissions.ts'
import type { Db } from '../db/sql.ts'
import { counted } from '../wording.ts'

/** Sign-ups from one client address to one page in an hour (docs/decisions.md, hosted pages). */
export const SIGNUPS_PER_HOUR = 5
/** Submissions from one client address to one form in an hour. */
export const FORM_SUBMISSIONS_PER_HOUR = 10

/**
 * Counts a submission of the client at `target` (`signup:<slug>`, `form:<id>`) and refuses it
 * past `limit` in the hour. A request without a client address (in-process) is not counted.
 */
export async function countSubmission(
  db: Db,
  target: string,
  client: string | undefined,
  limit: number,
): Promise<void> {
  if (client === undefined) return
  const tally = await countPublicSubmission(db, `${target}:${client}`, 60)
  if (tally.submissions <= limit) return
  const retryAfter = Math.max(1, Math.ceil(tally.endsInMs / 1000))
  throw new AppError(
    'TOO_MANY_SUBMISSIONS',
    `Too many submissions from your address; try again in ${counted(Math.ceil(retryAfter / 60), 'minute')}`,
    { details: { retryAfter }, waitMs: tally.endsInMs },
  )
}
