-- Mailroom's one clock: the database's clock, plus an offset that only tests set (the session
-- setting mailroom.clock_offset_ms), so that they can stand just before a quota window ends, or
-- past a session's lifetime, instead of waiting for it.
--
-- Every statement on Mailroom's tables reads it, whether it decides by time (limits, pauses,
-- leases, retries, expiry, retention, liveness) or only records one (created_at, updated_at,
-- and their column defaults): a time recorded on another clock than the one it is later
-- compared with would be off by the offset. The one exception is graphile-worker's tables
-- (src/db/jobs.ts, src/db/graphile-internals.ts): graphile-worker compares a job's run_at and
-- locked_at with now() in its own statements, so ours do too.
create or replace function mailroom_now() returns timestamptz
  language sql stable
  as $$ select now() + coalesce(nullif(current_setting('mailroom.clock_offset_ms', true), '')::bigint, 0)
                       * interval '1 millisecond' $$;
-- The same, advancing within a transaction (pacing measures the time between two statements).
create or replace function mailroom_clock() returns timestamptz
  language sql volatile
  as $$ select clock_timestamp() + coalesce(nullif(current_setting('mailroom.clock_offset_ms', true), '')::bigint, 0)
                                   * interval '1 millisecond' $$;
