-- A job waiting in a named queue (a connection's next queue run, say) starts as soon as the job
-- before it ends, not at graphile-worker's next poll. graphile-worker 0.17 releases a named queue
-- in its completion statement, which it does not await before asking for the next job: that ask
-- meets the queue still locked, and the job waiting there was announced (jobs:insert) when it
-- was added, while the queue was locked. So the release announces it again, on the channel the
-- workers listen on, delivered once the release commits. The payload differs each time, since
-- PostgreSQL folds equal notifications of one transaction into one (as add_job's do). "Due" by
-- the clock, not by now(): a job added while the release was under way is due as well.
create or replace function mailroom_announce_released_job_queue() returns trigger
  language plpgsql
  as $$
begin
  if exists (select 1 from graphile_worker._private_jobs j
             where j.job_queue_id = new.id and j.is_available and j.run_at <= clock_timestamp()) then
    perform pg_notify('jobs:insert', '{"r":' || random()::text || ',"count":1}');
  end if;
  return null;
end
$$;

-- The trigger is (re)made here, beside its function, since it cannot exist without it.
create or replace trigger mailroom_announce_released_job_queue
  after update of locked_at on graphile_worker._private_job_queues
  for each row when (old.locked_at is not null and new.locked_at is null)
  execute function mailroom_announce_released_job_queue();
