-- Queued mail (POST /enqueue, and batches later) is outbox records waiting in status `queued`.
alter table outbox drop constraint outbox_status_check;
alter table outbox add constraint outbox_status_check
  check (status in ('queued', 'sending', 'sent', 'failed'));
alter table outbox
  -- Kept only until the message is sent: a queued message is sent later, from here.
  add column text_body text,
  add column html_body text,
  -- SMTP attempts made for this message.
  add column attempts integer not null default 0,
  -- Transient failures so far (unreachable server, 4xx): the retry schedule and the give-up count.
  add column failures integer not null default 0,
  -- Push-backs so far: only the back-off grows; waiting is not failing.
  add column deferrals integer not null default 0,
  -- A queued message is not sent before this instant (mailroom_now() time).
  add column next_attempt_at timestamptz,
  -- The worker process sending it, while `sending`: if that process dies, the message is queued again.
  add column claimed_by text;

create index outbox_queue on outbox (connection_id, next_attempt_at, id) where status = 'queued';
create index outbox_claimed on outbox (claimed_by) where claimed_by is not null;

-- Worker processes that are alive, as far as their heartbeats tell.
create table worker_processes (
  id text primary key,
  -- The ids graphile-worker locks that process's jobs with, so they can be unlocked when it dies.
  job_worker_ids text[] not null default '{}',
  started_at timestamptz not null default now(),
  beat_at timestamptz not null default now()
);
