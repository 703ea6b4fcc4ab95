import type { Db } from './sql.ts'

/**
 * The public_submissions table: submissions to hosted pages and forms, counted per subject (a
 * client address at one page or form) in a window that opens with the first one.
 */

/** Counts one submission of `subject`; returns how many it now has in its window, and when that ends. */
export async function countPublicSubmission(
  db: Db,
  subject: string,
  windowMinutes: number,
): Promise<{ submissions: number; endsInMs: number }> {
  const ended = db`mailroom_now() - make_interval(mins => ${windowMinutes})`
  const [row] = await db<{ submissions: number; ends_in_ms: number }[]>`
    with dropped as (
      delete from public_submissions where window_start <= ${ended} and subject <> ${subject}
    )
    insert into public_submissions as s (subject, submissions, window_start) values (${subject}, 1, mailroom_now())
    on conflict (subject) do update set
      submissions = case when s.window_start <= ${ended} then 1 else s.submissions + 1 end,
      window_start = case when s.window_start <= ${ended} then mailroom_now() else s.window_start end
    returning submissions,
      ceil(extract(epoch from window_start + make_interval(mins => ${windowMinutes}) - mailroom_now()) * 1000)::float8
        as ends_in_ms`
  return { submissions: row?.submissions ?? 0, endsInMs: row?.ends_in_ms ?? 0 }
}
