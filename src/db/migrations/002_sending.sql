-- Every attempted send, whatever its path (/send now; the queue and batches later).
create table outbox (
  id integer generated always as identity primary key,
  account_id integer not null references accounts (id) on delete cascade,
  connection_id integer references connections (id) on delete set null,
  status text not null check (status in ('sending', 'sent', 'failed')),
  from_address text not null,
  to_addresses text[] not null,
  cc_addresses text[] not null default '{}',
  bcc_addresses text[] not null default '{}',
  subject text not null,
  message_id text not null,
  error text,
  -- SHA-256 of the caller's Idempotency-Key (any length, so hashed before it meets an index).
  idempotency_key_sha256 bytea,
  -- While `sending`: past this instant the attempt's process is taken for dead.
  lease_expires_at timestamptz,
  -- Where the reserved units were taken, so a give-back returns them to the same windows.
  usage_day date,
  quota_window timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  sent_at timestamptz
);
create unique index outbox_idempotency_key on outbox (account_id, idempotency_key_sha256)
  where idempotency_key_sha256 is not null;
create index outbox_account_newest on outbox (account_id, id desc);
create index outbox_created_at on outbox (created_at);

-- The Free plan's daily count, one row per account and UTC day.
create table daily_usage (
  account_id integer not null references accounts (id) on delete cascade,
  day date not null,
  used integer not null check (used >= 0),
  primary key (account_id, day)
);

-- A connection's quota count, one row per connection and fixed UTC window (day or hour).
create table quota_usage (
  connection_id integer not null references connections (id) on delete cascade,
  window_start timestamptz not null,
  used integer not null check (used >= 0),
  primary key (connection_id, window_start)
);

-- Pacing: a token bucket per connection, refilled at `rate` tokens a minute.
create table connection_pacing (
  connection_id integer primary key references connections (id) on delete cascade,
  tokens double precision not null,
  refilled_at timestamptz not null
);
