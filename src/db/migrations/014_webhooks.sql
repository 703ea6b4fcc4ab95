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
