-- Addresses an account no longer mails: one entry per account and address whatever its case
-- (the unique index compares lower(email), as audience members do). `strength` orders the
-- entries so that one statement can let a stronger reason replace a weaker one
-- (`suppressionStrength`, src/suppressions/strength.ts, is the one place the order is written).
create table suppressions (
  id integer generated always as identity primary key,
  account_id integer not null references accounts (id) on delete cascade,
  email text not null,
  reason text not null check (reason in ('hard_bounce', 'complaint', 'unsubscribe', 'manual')),
  scope text not null check (scope in ('all', 'marketing')),
  strength smallint not null,
  detail text,
  source_type text not null check (source_type in ('email', 'page', 'api', 'dashboard', 'operator')),
  source_id integer,
  created_at timestamptz not null default mailroom_now()
);
create unique index suppressions_account_address on suppressions (account_id, lower(email));
-- The listing: an account's entries newest first.
create index suppressions_account_id on suppressions (account_id, id desc);
