-- POST /send's work before SMTP in one round trip: claim the idempotency key by recording the
-- attempt, then take one unit of the plan's daily limit, one of the connection's quota and a
-- pacing token, in the rulings' order. The key is claimed first, so that a concurrent request
-- with the same key waits on the unique index and never sees a refusal caused by the message it
-- duplicates. When a limit refuses, the block's subtransaction undoes everything the function
-- did (the attempt, its key, the units taken before) and the function says which limit refused,
-- with its figures. The counters' statements are those of src/db/usage.ts (the queue's).
create function mailroom_send_attempt(
  p_account integer, p_connection integer, p_from text, p_to text[], p_cc text[], p_bcc text[],
  p_subject text, p_text_body text, p_html_body text, p_message_id text, p_key bytea,
  p_lease_seconds integer,
  -- Null: no such limit (a plan without a daily limit, a connection without a quota).
  p_daily_limit integer, p_quota integer, p_quota_period text,
  p_pacing_capacity float8, p_pacing_per_second float8,
  -- The attempt's outbox id; null when refused.
  out attempt_id integer,
  -- Null when every unit was taken; otherwise 'key' (another request holds it), 'daily', 'quota'
  -- or 'pacing'.
  out refused text,
  -- Where the units were taken (for a give-back); null where no limit applies.
  out day_taken date, out window_taken timestamptz,
  -- What the refusing limit says: its count, the wait until it lets a message through, and
  -- (quota) when its window ends.
  out limit_used integer, out wait_ms float8, out resets_at timestamptz)
language plpgsql as $$
declare
  token_taken boolean;
begin
  insert into outbox (account_id, connection_id, status, from_address, to_addresses, cc_addresses,
                      bcc_addresses, subject, text_body, html_body, message_id, idempotency_key_sha256,
                      lease_expires_at, attempts, sent_now)
  values (p_account, p_connection, 'sending', p_from, p_to, p_cc, p_bcc, p_subject, p_text_body,
          p_html_body, p_message_id, p_key, now() + make_interval(secs => p_lease_seconds), 1, true)
  on conflict (account_id, idempotency_key_sha256) where idempotency_key_sha256 is not null do nothing
  returning id into attempt_id;
  if attempt_id is null then
    refused := 'key';
    return;
  end if;

  begin
    if p_daily_limit is not null then
      insert into daily_usage as d (account_id, day, used)
      values (p_account, (mailroom_now() at time zone 'UTC')::date, 1)
      on conflict (account_id, day) do update set used = d.used + 1 where d.used < p_daily_limit
      returning d.day into day_taken;
      if day_taken is null then
        refused := 'daily';
        select d.used into limit_used
        from daily_usage d
        where d.account_id = p_account and d.day = (mailroom_now() at time zone 'UTC')::date;
        wait_ms := greatest(0, ceil(extract(epoch from
          ((mailroom_now() at time zone 'UTC')::date + 1)::timestamp at time zone 'UTC' - mailroom_now()) * 1000));
        raise sqlstate 'MR429';
      end if;
    end if;

    if p_quota is not null then
      insert into quota_usage as q (connection_id, window_start, used)
      values (p_connection, date_trunc(p_quota_period, mailroom_now(), 'UTC'), 1)
      on conflict (connection_id, window_start) do update set used = q.used + 1 where q.used < p_quota
      returning q.window_start into window_taken;
      if window_taken is null then
        refused := 'quota';
        select q.used into limit_used
        from quota_usage q
        where q.connection_id = p_connection
          and q.window_start = date_trunc(p_quota_period, mailroom_now(), 'UTC');
        resets_at := date_trunc(p_quota_period, mailroom_now(), 'UTC') + ('1 ' || p_quota_period)::interval;
        wait_ms := greatest(0, ceil(extract(epoch from resets_at - mailroom_now()) * 1000));
        raise sqlstate 'MR429';
      end if;
    end if;

    insert into connection_pacing as p (connection_id, tokens, refilled_at)
    values (p_connection, p_pacing_capacity - 1, mailroom_clock())
    on conflict (connection_id) do update
      set tokens = least(p_pacing_capacity,
            p.tokens + greatest(0, extract(epoch from mailroom_clock() - p.refilled_at)) * p_pacing_per_second) - 1,
          refilled_at = mailroom_clock()
      where least(p_pacing_capacity,
              p.tokens + greatest(0, extract(epoch from mailroom_clock() - p.refilled_at)) * p_pacing_per_second) >= 1
    returning true into token_taken;
    if token_taken is null then
      refused := 'pacing';
      select ceil((1 - least(p_pacing_capacity,
               p.tokens + greatest(0, extract(epoch from mailroom_clock() - p.refilled_at)) * p_pacing_per_second))
             / p_pacing_per_second * 1000)
      into wait_ms
      from connection_pacing p where p.connection_id = p_connection;
      raise sqlstate 'MR429';
    end if;

    if day_taken is not null or window_taken is not null then
      update outbox set usage_day = day_taken, quota_window = window_taken where id = attempt_id;
    end if;
  exception when sqlstate 'MR429' then
    -- Back to the block's start: no unit taken. The attempt (and with it the key) goes too, so
    -- that "429: wait and retry" may reuse the key.
    delete from outbox where id = attempt_id;
    attempt_id := null;
    day_taken := null;
    window_taken := null;
  end;
end
$$;
