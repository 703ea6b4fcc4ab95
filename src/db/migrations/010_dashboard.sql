-- The dashboard: passwords, sessions, sign-in throttling, keys' last use, and the indexes behind
-- the outbox's filters.

-- An account's dashboard password, as a memory-hard hash (scrypt, parameters in the string).
create table account_passwords (
  account_id integer primary key references accounts (id) on delete cascade,
  hash text not null,
  updated_at timestamptz not null default now()
);

-- A signed-in browser. Only the SHA-256 of its token is kept: a copy of this table signs nobody in.
create table sessions (
  id integer generated always as identity primary key,
  account_id integer not null references accounts (id) on delete cascade,
  token_sha256 bytea not null unique,
  created_at timestamptz not null default now(),
  last_used_at timestamptz not null default now(),
  -- One message for the next page shown (after a redirect); read once.
  flash text
);
create index sessions_account on sessions (account_id);

-- Sign-in attempts not known to have succeeded, per subject (`email:<address>` or
-- `client:<address>`): a window opens with the first one and counts them until it ends.
create table sign_in_attempts (
  subject text primary key,
  attempts integer not null,
  window_start timestamptz not null
);
create index sign_in_attempts_window on sign_in_attempts (window_start);

-- When the key last authenticated a request (to the minute: see usableKeysByHash).
alter table api_keys add column last_used_at timestamptz;

-- The dashboard's outbox filters, each newest first within one account.
create index outbox_account_status on outbox (account_id, status, id desc);
create index outbox_account_connection on outbox (account_id, connection_id, id desc);
create index outbox_account_batch on outbox (account_id, batch_id, id desc) where batch_id is not null;
create index outbox_account_created on outbox (account_id, created_at);
