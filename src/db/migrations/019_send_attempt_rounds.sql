-- POST /sends through one connection at the same moment claim their attempts in one statement
-- (a round: src/sending/send-rounds.ts), each exactly as mailroom_send_attempt claims one, in the
-- order given: a later attempt sees the units and idempotency keys the earlier ones took. One
-- transaction for the round: the connection's pacing row is locked and written once per round
-- rather than once per request, and its commit is one wait for the disk instead of one each.
-- Each element of p_attempts holds mailroom_send_attempt's arguments by name, without the
-- "p_" prefix. The answer has one row per attempt, numbered from 1 in the order given.
create function mailroom_send_attempts(p_attempts jsonb)
  returns table (ord integer, attempt_id integer, refused text, day_taken date, window_taken timestamptz,
                 limit_used integer, wait_ms float8, resets_at timestamptz)
  language plpgsql volatile
  as $$
declare
  a jsonb;
  n integer := 0;
begin
  for a in select value from jsonb_array_elements(p_attempts) loop
    n := n + 1;
    return query select n, s.* from mailroom_send_attempt(
      (a->>'account')::integer, (a->>'connection')::integer, a->>'from',
      array(select jsonb_array_elements_text(a->'to')), array(select jsonb_array_elements_text(a->'cc')),
      array(select jsonb_array_elements_text(a->'bcc')), a->>'subject', a->>'text_body', a->>'html_body',
      a->>'message_id', decode(a->>'key', 'hex'), (a->>'lease_seconds')::integer,
      (a->>'daily_limit')::integer, (a->>'quota')::integer, a->>'quota_period',
      (a->>'pacing_capacity')::float8, (a->>'pacing_per_second')::float8) s;
  end loop;
end
$$;
