-- POST /sends through one connection at the same moment claim their attempts in one statement
-- (a round: src/fast-path/send-statements.ts), with the same outcome as one at a time in the order
-- given: each claims its idempotency key by recording its attempt (a key an earlier one of the
-- round took is refused as taken), then the units of every limit are taken for all of them at
-- once, in the contract's order (mailroom_take_units, as the queue takes them); those the limits
-- leave over are refused by the limit that ran out and, with their keys, not recorded. The key
-- is claimed before any unit is taken, so that a concurrent request with the same key waits on
-- the unique index and never sees a refusal caused by the message it duplicates. One
-- transaction for the round: the connection's pacing row is locked and written once per round
-- rather than once per request. The attempts of a round share their account, connection and
-- limits. Each element of p_attempts holds an attempt's message under the outbox's column
-- names, and its key (hex). The answer has one row per attempt, numbered from 1 in the order
-- given.
create or replace function mailroom_send_attempts(
  p_account integer, p_connection integer, p_attempts jsonb, p_lease_seconds integer,
  p_daily_limit integer, p_quota integer, p_quota_period text,
  p_pacing_capacity float8, p_pacing_per_second float8)
  returns table (ord integer, attempt_id integer, refused text, day_taken date, window_taken timestamptz,
                 limit_used integer, wait_ms float8, resets_at timestamptz)
  language plpgsql volatile
  as $$
declare
  a jsonb;
  n integer := 0;
  ids integer[] := '{}';
  recorded integer[] := '{}';
  granted integer := 0;
  units record;
  last_refusal record;
  inserted integer;
begin
  for a in select value from jsonb_array_elements(p_attempts) loop
    n := n + 1;
    insert into outbox (account_id, connection_id, status, from_address, to_addresses, cc_addresses,
                        bcc_addresses, subject, text_body, html_body, message_id, idempotency_key_sha256,
                        lease_expires_at, attempts, sent_now)
    values (p_account, p_connection, 'sending', a->>'from_address',
            array(select jsonb_array_elements_text(a->'to_addresses')),
            array(select jsonb_array_elements_text(a->'cc_addresses')),
            array(select jsonb_array_elements_text(a->'bcc_addresses')), a->>'subject', a->>'text_body',
            a->>'html_body', a->>'message_id', decode(a->>'key', 'hex'),
            mailroom_now() + make_interval(secs => p_lease_seconds), 1, true)
    on conflict (account_id, idempotency_key_sha256) where idempotency_key_sha256 is not null do nothing
    returning id into inserted;
    ids[n] := inserted;
    if inserted is not null then recorded := recorded || n; end if;
  end loop;
  -- Units for every attempt recorded, as many as the limits allow; a limit that allows fewer
  -- says why the rest waits (a token may come due meanwhile: then it goes too).
  while granted < coalesce(array_length(recorded, 1), 0) loop
    select * into units from mailroom_take_units(p_account, p_daily_limit, p_connection, p_quota, p_quota_period,
      p_pacing_capacity, p_pacing_per_second, array_length(recorded, 1) - granted);
    if units.refused is not null then
      last_refusal := units;
      exit;
    end if;
    for i in granted + 1 .. granted + units.granted loop
      if units.usage_day is not null or units.quota_window is not null then
        update outbox set usage_day = units.usage_day, quota_window = units.quota_window where id = ids[recorded[i]];
      end if;
      return query select recorded[i], ids[recorded[i]], null::text, units.usage_day, units.quota_window,
        null::integer, null::float8, null::timestamptz;
    end loop;
    granted := granted + units.granted;
  end loop;
  -- Refused by a limit: "429: wait and retry" may reuse the key.
  for i in granted + 1 .. coalesce(array_length(recorded, 1), 0) loop
    delete from outbox where id = ids[recorded[i]];
    return query select recorded[i], null::integer, last_refusal.refused, null::date, null::timestamptz,
      last_refusal.used, last_refusal.wait_ms, last_refusal.resets_at;
  end loop;
  for i in 1 .. n loop
    if ids[i] is null then
      return query select i, null::integer, 'key'::text, null::date, null::timestamptz,
        null::integer, null::float8, null::timestamptz;
    end if;
  end loop;
end
$$;
