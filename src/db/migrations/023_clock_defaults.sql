-- Every time Mailroom records is on the clock it compares times with, mailroom_now() (the
-- database's clock plus a session's offset, see src/db/functions/10_mailroom_clock.sql): a row's
-- age (retention, a session's lifetime, a worker's last beat) is then the same under any offset.
-- A default only reads the function when a row is inserted; the function is made before the
-- migrations run.
alter table accounts
  alter column created_at set default mailroom_now(),
  alter column updated_at set default mailroom_now();
alter table connections
  alter column created_at set default mailroom_now(),
  alter column updated_at set default mailroom_now();
alter table api_keys
  alter column created_at set default mailroom_now(),
  alter column updated_at set default mailroom_now();
alter table templates
  alter column created_at set default mailroom_now(),
  alter column updated_at set default mailroom_now();
alter table outbox
  alter column created_at set default mailroom_now(),
  alter column updated_at set default mailroom_now();
alter table worker_processes
  alter column started_at set default mailroom_now(),
  alter column beat_at set default mailroom_now();
alter table audiences
  alter column created_at set default mailroom_now(),
  alter column updated_at set default mailroom_now();
alter table audience_members
  alter column created_at set default mailroom_now();
alter table batches
  alter column created_at set default mailroom_now(),
  alter column updated_at set default mailroom_now();
alter table outbox_attempts
  alter column at set default mailroom_now();
alter table account_passwords
  alter column updated_at set default mailroom_now();
alter table sessions
  alter column created_at set default mailroom_now(),
  alter column last_used_at set default mailroom_now();
alter table signup_pages
  alter column created_at set default mailroom_now(),
  alter column updated_at set default mailroom_now();
alter table signup_confirmations
  alter column created_at set default mailroom_now();
alter table forms
  alter column created_at set default mailroom_now(),
  alter column updated_at set default mailroom_now();
alter table batch_contents
  alter column created_at set default mailroom_now();
alter table outbox_retries
  alter column at set default mailroom_now();
alter table webhook_endpoints
  alter column created_at set default mailroom_now(),
  alter column updated_at set default mailroom_now();
alter table webhook_events
  alter column created_at set default mailroom_now();
alter table webhook_deliveries
  alter column next_attempt_at set default mailroom_now(),
  alter column created_at set default mailroom_now(),
  alter column updated_at set default mailroom_now();
