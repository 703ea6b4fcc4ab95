-- Scheduled sends and changing one's mind. A scheduled email is a queued record whose
-- next_attempt_at is its scheduled_at: the queue's claim already leaves a record alone until it is
-- due, so no job has to move it anywhere when its time comes, and a crash cannot strand it. It
-- reads as `scheduled` while scheduled_at is ahead of mailroom_now(). A canceled email ends in a
-- status of its own, which nothing claims.
alter table outbox add column scheduled_at timestamptz;
alter table outbox drop constraint outbox_status_check;
alter table outbox add constraint outbox_status_check
  check (status in ('queued', 'sending', 'sent', 'failed', 'canceled'));

-- A scheduled batch is expanded when due (its expansion run waits until then); a canceled one
-- keeps when it was canceled, which its status is read from.
alter table batches
  add column scheduled_at timestamptz,
  add column canceled_at timestamptz;
