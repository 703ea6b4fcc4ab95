create table accounts (
  id integer generated always as identity primary key,
  email text not null,
  plan text not null default 'free' check (plan in ('free', 'pro')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index accounts_email_key on accounts (lower(email));

create table connections (
  id integer generated always as identity primary key,
  account_id integer not null references accounts (id) on delete cascade,
  from_address text not null,
  host text not null,
  port integer not null check (port in (465, 587, 2525)),
  username text not null,
  -- AES-256-GCM under MAILROOM_SECRET: iv, tag and ciphertext, base64, joined by '.'
  password_encrypted text not null,
  quota integer check (quota is null or quota > 0),
  quota_period text check (quota_period in ('day', 'hour')),
  rate integer not null default 60 check (rate between 1 and 6000),
  is_default boolean not null default false,
  disabled boolean not null default false,
  paused_until timestamptz,
  consecutive_failures integer not null default 0,
  -- How many automatic pauses in a row; each doubles the next pause.
  pause_streak integer not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((quota is null) = (quota_period is null))
);
create unique index connections_from_key on connections (account_id, lower(from_address));
create unique index connections_one_default on connections (account_id) where is_default;

create table api_keys (
  id integer generated always as identity primary key,
  account_id integer not null references accounts (id) on delete cascade,
  name text not null,
  -- The visible start of the secret, so an operator can tell keys apart; never enough to use.
  prefix text not null,
  secret_sha256 bytea not null unique,
  -- A scoped key whose connection is deleted keeps `scoped` and loses `connection_id`: it then
  -- authenticates nobody, which is what the specification asks of it.
  scoped boolean not null default false,
  connection_id integer references connections (id) on delete set null,
  expires_at timestamptz,
  revoked_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index api_keys_account on api_keys (account_id);

create table templates (
  id integer generated always as identity primary key,
  account_id integer not null references accounts (id) on delete cascade,
  name text not null,
  subject text not null,
  text_body text,
  html_body text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index templates_account on templates (account_id, id);
