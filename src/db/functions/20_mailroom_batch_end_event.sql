-- A batch's end, when records of it have just been settled: the batch.completed or batch.failed
-- event to record, or nothing when the batch still has mail to send (queued, sending, or
-- recipients still in its store, batch_recipients), when it was canceled (its batch.canceled
-- event was recorded then), or nobody listens. Records are settled
-- several in one statement (the queue settles a round of lanes at once), so the end is judged
-- with every record the statement settles: `settled` and `settled_statuses` are their ids and
-- new statuses (null when the caller settled none, as when a deleted connection fails its
-- queue). Whether a function called by a statement sees that statement's own changes does not
-- matter: the settled records are left out of what it reads and counted from the arguments.
-- Volatile, so that each statement here reads afresh: after the lock on the batch, it sees what
-- concurrent settlements committed, and of two last records settled at once exactly one finds
-- the batch ended.
create or replace function mailroom_batch_end_event(batch integer, settled integer[], settled_statuses text[])
  returns table (account_id integer, type text, data jsonb)
  language plpgsql volatile
  as $$
declare
  b record;
  sent integer;
  failed integer;
begin
  if not exists (
    select 1 from batches x join webhook_endpoints e on e.account_id = x.account_id
    where x.id = batch and e.enabled and e.events && array['batch.completed', 'batch.failed']
  ) then
    return;
  end if;
  select * into b from batches where id = batch for update;
  if not found or b.canceled_at is not null then return; end if;
  if exists (
    select 1 from outbox o where o.batch_id = batch and o.id <> all(coalesce(settled, '{}'))
      and o.status in ('queued', 'sending')
  ) or exists (select 1 from batch_recipients r where r.batch_id = batch) then
    return;
  end if;
  select count(*) filter (where o.status = 'sent')::int, count(*) filter (where o.status = 'failed')::int
    into sent, failed
  from outbox o where o.batch_id = batch and o.id <> all(coalesce(settled, '{}'));
  sent := sent + cardinality(array_positions(coalesce(settled_statuses, '{}'), 'sent'));
  failed := failed + cardinality(array_positions(coalesce(settled_statuses, '{}'), 'failed'));
  return query select b.account_id,
    case when sent > 0 then 'batch.completed' else 'batch.failed' end,
    jsonb_build_object('batch_id', b.id, 'name', b.name,
      'status', case when sent > 0 then 'completed' else 'failed' end,
      'total_count', b.total_count, 'sent_count', sent, 'failed_count', failed);
end $$;
