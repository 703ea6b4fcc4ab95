import type { Db } from './sql.ts'

/**
 * The sign_in_attempts table: sign-in attempts not known to have succeeded, counted per subject
 * (the address signed in with, the client address) in a window that opens with the first one.
 * An attempt is counted before its password is checked, so that attempts arriving together
 * cannot all slip under the limit while the first ones are still being checked.
 */

export interface Window {
  minutes: number
}

/**
 * Counts one attempt for each subject (a new window for those whose window ended) and drops
 * ended windows. Returns the most attempts any of them now has, and when the last window ends.
 */
export async function countAttempt(
  db: Db,
  subjects: string[],
  window: Window,
): Promise<{ attempts: number; endsInMs: number }> {
  const ended = db`mailroom_now() - make_interval(mins => ${window.minutes})`
  const [row] = await db<{ attempts: number; ends_in_ms: number }[]>`
    -- A row is changed once per statement: the subjects counted now are renewed by the upsert.
    with dropped as (
      delete from sign_in_attempts where window_start <= ${ended} and subject <> all(${subjects}::text[])
    ), counted as (
      insert into sign_in_attempts as f (subject, attempts, window_start)
      select subject, 1, mailroom_now() from unnest(${subjects}::text[]) as subject
      on conflict (subject) do update set
        attempts = case when f.window_start <= ${ended} then 1 else f.attempts + 1 end,
        window_start = case when f.window_start <= ${ended} then mailroom_now() else f.window_start end
      returning attempts, window_start
    )
    select max(attempts)::int as attempts,
      max(ceil(extract(epoch from window_start + make_interval(mins => ${window.minutes}) - mailroom_now()) * 1000))::float8
        as ends_in_ms
    from counted`
  return { attempts: row?.attempts ?? 0, endsInMs: row?.ends_in_ms ?? 0 }
}

/** The subject's attempts in its window still open (none once it ended), without counting one, and when it ends. */
export async function attemptsOf(
  db: Db,
  subject: string,
  window: Window,
): Promise<{ attempts: number; endsInMs: number }> {
  const [row] = await db<{ attempts: number; ends_in_ms: number }[]>`
    select attempts,
      ceil(extract(epoch from window_start + make_interval(mins => ${window.minutes}) - mailroom_now()) * 1000)::float8
        as ends_in_ms
    from sign_in_attempts
    where subject = ${subject} and window_start > mailroom_now() - make_interval(mins => ${window.minutes})`
  return { attempts: row?.attempts ?? 0, endsInMs: row?.ends_in_ms ?? 0 }
}

/** Takes back one attempt of the subject (it succeeded). */
export async function forgiveAttempt(db: Db, subject: string): Promise<void> {
  await db`update sign_in_attempts set attempts = attempts - 1 where subject = ${subject} and attempts > 0`
}

/** Forgets the subject's attempts. */
export async function clearAttempts(db: Db, subject: string): Promise<void> {
  await db`delete from sign_in_attempts where subject = ${subject}`
}
