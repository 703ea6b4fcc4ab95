-- Hosted pages: audiences' sign-up pages (with double opt-in confirmations), forms, the public
-- side's rate limits, and what queued mail needs for them (Reply-To, one-click unsubscribe).

-- One sign-up page per audience. `connection_id` null: the account's default connection when sending.
create table signup_pages (
  audience_id integer primary key references audiences (id) on delete cascade,
  slug text not null unique check (slug ~ '^[a-z0-9-]{3,64}$'),
  title text not null,
  description text,
  connection_id integer references connections (id) on delete set null,
  double_opt_in boolean not null default false,
  enabled boolean not null default true,
  -- Addresses that became members through the page.
  signups integer not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- A double opt-in waiting for its link to be followed. Only the SHA-256 of the link's token is kept.
create table signup_confirmations (
  id integer generated always as identity primary key,
  audience_id integer not null references audiences (id) on delete cascade,
  email text not null,
  token_sha256 bytea not null unique,
  expires_at timestamptz not null,
  confirmed_at timestamptz,
  created_at timestamptz not null default now()
);
create index signup_confirmations_expiry on signup_confirmations (expires_at);

-- Forms, addressed in public by `public_id` (random), never by `id`.
create table forms (
  id integer generated always as identity primary key,
  account_id integer not null references accounts (id) on delete cascade,
  public_id text not null unique,
  name text not null,
  connection_id integer references connections (id) on delete set null,
  redirect_url text,
  allowed_origins text[] not null default '{}',
  submissions integer not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index forms_account on forms (account_id, id);

-- Submissions per client address and page or form, in a window that opens with the first one.
create table public_submissions (
  subject text primary key,
  submissions integer not null,
  window_start timestamptz not null
);
create index public_submissions_window on public_submissions (window_start);

-- A form's mail answers to the submitter; an audience batch's mail carries its unsubscribe link.
alter table outbox add column reply_to text;
alter table outbox add column unsubscribe_url text;
