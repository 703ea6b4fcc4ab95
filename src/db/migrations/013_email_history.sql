-- An email's history, for GET /v1/emails/{id} and the dashboard's outbox page. Most of it is read
-- from what is kept anyway: the record's creation (queued, or submitted to POST /send), every
-- attempt (outbox_attempts) and its end (status, error). Only what would otherwise be lost is
-- written here: an operator's retry, which resets the record's status and error.

-- Made by POST /send (sent at once), rather than queued. Records from before this migration
-- read as queued: nothing kept says otherwise.
alter table outbox add column sent_now boolean not null default false;

-- A failed record queued again by hand: who did it, and the failure it undid.
create table outbox_retries (
  id bigint generated always as identity primary key,
  outbox_id integer not null references outbox (id) on delete cascade,
  at timestamptz not null default now(),
  -- `dashboard`: the account's owner, on the batch page; `operator`: `mailroom batch retry`.
  retried_by text not null check (retried_by in ('dashboard', 'operator')),
  failed_at timestamptz not null,
  error text
);
create index outbox_retries_record on outbox_retries (outbox_id, id);
