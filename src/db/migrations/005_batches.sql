-- A batch is its recipients' queued outbox records (outbox.batch_id): their statuses are the
-- per-recipient records, and the batch's counts, progress and status are read from them, so
-- they can never disagree with what was sent, whatever crashed in between.
create table batches (
  id integer generated always as identity primary key,
  account_id integer not null references accounts (id) on delete cascade,
  -- Kept for a retry of failed recipients after their own records lost it (connection deleted).
  connection_id integer references connections (id) on delete set null,
  -- The temporary audience behind a `recipients` batch, removed with the batch.
  temporary_audience_id integer references audiences (id) on delete set null,
  name text not null,
  total_count integer not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index batches_account on batches (account_id, id);

alter table outbox add column batch_id integer references batches (id) on delete set null;
create index outbox_batch on outbox (batch_id, status) where batch_id is not null;
