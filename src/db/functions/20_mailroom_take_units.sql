-- Takes up to p_wanted units of every limit a send counts against, in the contract's order (the
-- plan's daily limit, the connection's quota, its pacing bucket), in one statement: the queue
-- claims several messages at a time, and each round trip saved is a send's worth of time. Every
-- counter is read under its row lock, so that all processes sharing the database see one count.
-- The grant is the least any limit allows; when one allows none, nothing is taken and the answer
-- names it (`refused`), with its count and the wait until it allows one again.
create or replace function mailroom_take_units(
  p_account integer, p_daily_limit integer,
  p_connection integer, p_quota integer, p_period text,
  p_capacity double precision, p_per_second double precision,
  p_wanted integer)
returns table (granted integer, usage_day date, quota_window timestamptz, refused text, used integer,
               wait_ms double precision, resets_at timestamptz)
language plpgsql volatile
as $$
#variable_conflict use_column
declare
  grant_now integer := p_wanted;
  today date := (mailroom_now() at time zone 'UTC')::date;
  window_start_now timestamptz;
  counted integer;
  tokens_now double precision;
begin
  if p_daily_limit is not null then
    insert into daily_usage (account_id, day, used) values (p_account, today, 0) on conflict do nothing;
    select d.used into counted from daily_usage d where d.account_id = p_account and d.day = today for update;
    if counted >= p_daily_limit then
      return query select 0, null::date, null::timestamptz, 'daily'::text, counted,
        greatest(0, ceil(extract(epoch from ((today + 1)::timestamp at time zone 'UTC') - mailroom_now()) * 1000))::float8,
        null::timestamptz;
      return;
    end if;
    grant_now := least(grant_now, p_daily_limit - counted);
  end if;
  if p_quota is not null then
    window_start_now := date_trunc(p_period, mailroom_now(), 'UTC');
    insert into quota_usage (connection_id, window_start, used) values (p_connection, window_start_now, 0)
      on conflict do nothing;
    select q.used into counted from quota_usage q
      where q.connection_id = p_connection and q.window_start = window_start_now for update;
    if counted >= p_quota then
      return query select 0, null::date, null::timestamptz, 'quota'::text, counted,
        greatest(0, ceil(extract(epoch from window_start_now + ('1 ' || p_period)::interval - mailroom_now()) * 1000))::float8,
        window_start_now + ('1 ' || p_period)::interval;
      return;
    end if;
    grant_now := least(grant_now, p_quota - counted);
  end if;
  insert into connection_pacing (connection_id, tokens, refilled_at) values (p_connection, p_capacity, mailroom_clock())
    on conflict do nothing;
  select least(p_capacity, p.tokens + greatest(0, extract(epoch from mailroom_clock() - p.refilled_at)) * p_per_second)
    into tokens_now from connection_pacing p where p.connection_id = p_connection for update;
  if tokens_now < 1 then
    return query select 0, null::date, null::timestamptz, 'pacing'::text, 0,
      ceil((1 - tokens_now) / p_per_second * 1000)::float8, null::timestamptz;
    return;
  end if;
  grant_now := least(grant_now, floor(tokens_now)::integer);
  update connection_pacing set tokens = tokens_now - grant_now, refilled_at = mailroom_clock()
    where connection_id = p_connection;
  if p_daily_limit is not null then
    update daily_usage set used = daily_usage.used + grant_now where account_id = p_account and day = today;
  end if;
  if p_quota is not null then
    update quota_usage set used = quota_usage.used + grant_now
      where connection_id = p_connection and window_start = window_start_now;
  end if;
  return query select grant_now, case when p_daily_limit is not null then today end,
    window_start_now, null::text, 0, 0::float8, null::timestamptz;
end
$$;
