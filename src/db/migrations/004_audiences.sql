-- Reusable recipient lists (Pro). A temporary audience holds the addresses of one `recipients`
-- batch: readable by ID, never listed.
create table audiences (
  id integer generated always as identity primary key,
  account_id integer not null references accounts (id) on delete cascade,
  name text not null,
  description text,
  temporary boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
-- GET /audiences: the account's lasting audiences, newest first.
create index audiences_account_newest on audiences (account_id, created_at desc, id desc)
  where not temporary;

create table audience_members (
  id integer generated always as identity primary key,
  audience_id integer not null references audiences (id) on delete cascade,
  email text not null,
  payload jsonb,
  created_at timestamptz not null default now()
);
-- One member per address and audience whatever its case: an import skips the rest with
-- `on conflict do nothing`.
create unique index audience_members_address on audience_members (audience_id, lower(email));
-- Pages of the members list, their count, and a batch's recipients, all in id order.
create index audience_members_audience on audience_members (audience_id, id);
