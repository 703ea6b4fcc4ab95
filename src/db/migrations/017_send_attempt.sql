-- POST /send's work before SMTP in one round trip: claim the idempotency key by recording the
-- attempt, then take one unit of the plan's daily limit, of the connection's quota and of its
-- pacing bucket (mailroom_take_units, the queue's too). The key is claimed first, so that a
-- concurrent request with the same key waits on the unique index and never sees a refusal
-- caused by the message it duplicates. A limit that refuses takes nothing; the attempt (and with
-- it the key) is removed, and the function says which limit refused, with its figures.
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
  units record;
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
  select * into units from mailroom_take_units(p_account, p_daily_limit, p_connection, p_quota, p_quota_period,
    p_pacing_capacity, p_pacing_per_second, 1);
  if units.refused is not null then
    -- "429: wait and retry" may reuse the key.
    delete from outbox where id = attempt_id;
    attempt_id := null;
    refused := units.refused;
    limit_used := units.used;
    wait_ms := units.wait_ms;
    resets_at := units.resets_at;
    return;
  end if;
  day_taken := units.usage_day;
  window_taken := units.quota_window;
  if day_taken is not null or window_taken is not null then
    update outbox set usage_day = day_taken, quota_window = window_taken where id = attempt_id;
  end if;
end
$$;
