-- Webhooks: an account's endpoints, the events recorded for them, and one delivery per event and
-- endpoint, sent by the worker (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature).

create table webhook_endpoints (
  id integer generated always as identity primary key,
  account_id integer not null references accounts (id) on delete cascade,
  url text not null,
  description text,
  -- Event types the endpoint is sent (email.sent, batch.completed, ...).
  events text[] not null,
  -- The signing secret (whsec_...), sealed with MAILROOM_SECRET: the worker must sign with it.
  secret_sealed text not null,
  enabled boolean not null default true,
  -- Why it was disabled (by its owner, or by the service after days of failures).
  disabled_reason text,
  disabled_at timestamptz,
  -- Since when every delivery attempt has failed; null after a success.
  failing_since timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
-- What recording an event looks up on every send: cheap when the account has none.
create index webhook_endpoints_account on webhook_endpoints (account_id) where enabled;

-- An event, recorded in the transaction of the state change it reports. `public_id` is the
-- webhook-id every delivery and retry of it carries.
create table webhook_events (
  id bigint generated always as identity primary key,
  public_id text not null unique default 'msg_' || replace(gen_random_uuid()::text, '-', ''),
  account_id integer not null references accounts (id) on delete cascade,
  type text not null,
  data jsonb not null,
  created_at timestamptz not null default now()
);
create index webhook_events_created on webhook_events (created_at);

create table webhook_deliveries (
  id bigint generated always as identity primary key,
  endpoint_id integer not null references webhook_endpoints (id) on delete cascade,
  event_id bigint not null references webhook_events (id) on delete cascade,
  -- pending (waiting for its next attempt), sending (claimed by a worker), delivered, failed.
  status text not null default 'pending' check (status in ('pending', 'sending', 'delivered', 'failed')),
  attempts integer not null default 0,
  next_attempt_at timestamptz default now(),
  -- The worker process sending it; if that process dies, the delivery is tried again.
  claimed_by text,
  claimed_at timestamptz,
  -- The last attempt: the endpoint's HTTP status (null when there was no answer) and what went wrong.
  response_status integer,
  error text,
  last_attempt_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index webhook_deliveries_due on webhook_deliveries (endpoint_id, next_attempt_at) where status = 'pending';
create index webhook_deliveries_endpoint on webhook_deliveries (endpoint_id, id);
create index webhook_deliveries_event on webhook_deliveries (event_id);
create index webhook_deliveries_claimed on webhook_deliveries (claimed_by) where claimed_by is not null;

-- A batch's end, when one of its records has just been settled (`settled`, now `settled_status`):
-- the batch.completed or batch.failed event to record, or nothing when the batch still has mail
-- to send or nobody listens. Volatile, so that each statement here reads afresh: after the lock on
-- the batch, it sees what concurrent settlements committed, and of two last records settled at
-- once exactly one finds the batch ended. `settled` null: the caller's earlier statements settled
-- the records (they are visible here).
create function mailroom_batch_end_event(batch integer, settled integer, settled_status text)
  returns table (account_id integer, type text, data jsonb)
  language plpgsql volatile
  as $$
declare
  b record;
  sent integer;
  failed integer;
begin
  if not exists (
    select 1 from batches x join webhook_endpoints e on e.account_id = x.account_id
    where x.id = batch and e.enabled and e.events && array['batch.completed', 'batch.failed']
  ) then
    return;
  end if;
  select * into b from batches where id = batch for update;
  if not found then return; end if;
  if exists (
    select 1 from outbox o where o.batch_id = batch and o.id is distinct from settled
      and o.status in ('queued', 'sending')
  ) then
    return;
  end if;
  select count(*) filter (where o.status = 'sent')::int, count(*) filter (where o.status = 'failed')::int
    into sent, failed
  from outbox o where o.batch_id = batch and o.id is distinct from settled;
  if settled is not null then
    sent := sent + (settled_status = 'sent')::int;
    failed := failed + (settled_status = 'failed')::int;
  end if;
  return query select b.account_id,
    case when sent > 0 then 'batch.completed' else 'batch.failed' end,
    jsonb_build_object('batch_id', b.id, 'name', b.name,
      'status', case when sent > 0 then 'completed' else 'failed' end,
      'total_count', b.total_count, 'sent_count', sent, 'failed_count', failed);
end $$;
