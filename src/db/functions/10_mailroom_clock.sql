-- The time every sending limit is measured in: the database's clock, plus an offset that only
-- tests set (the session setting mailroom.clock_offset_ms), so that they can stand just before a
-- quota window ends instead of waiting for it.
create or replace function mailroom_now() returns timestamptz
  language sql stable
  as $$ select now() + coalesce(nullif(current_setting('mailroom.clock_offset_ms', true), '')::bigint, 0)
                       * interval '1 millisecond' $$;
-- The same, advancing within a transaction (pacing measures the time between two statements).
create or replace function mailroom_clock() returns timestamptz
  language sql volatile
  as $$ select clock_timestamp() + coalesce(nullif(current_setting('mailroom.clock_offset_ms', true), '')::bigint, 0)
                                   * interval '1 millisecond' $$;
