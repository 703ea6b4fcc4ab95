-- The shape every API timestamp has (`YYYY-MM-DD HH:MM:SS`, UTC), in one place.
create or replace function api_timestamp(t timestamptz) returns text
  language sql immutable parallel safe
  as $$ select to_char(t at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS') $$;
