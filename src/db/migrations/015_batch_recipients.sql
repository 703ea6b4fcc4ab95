-- A batch's recipients are written at its creation to a narrow store, in blocks (one row holds a
-- thousand recipients, in order, as a JSON array of [email, payload, member id]), by one
-- insert-select from the audience: the request never writes one wide outbox record per member,
-- nor even one row per member (each row costs its index entry and foreign-key check). The worker
-- moves them into the outbox in bounded chunks, a little ahead of delivery, so that the outbox
-- never holds a large batch's whole list at once. A recipient is in exactly one of the two: each
-- chunk takes its recipients off the store and inserts their records in one transaction.
create table batch_recipients (
  batch_id integer not null references batches (id) on delete cascade,
  -- The block's place in the batch's order (the audience's member order).
  block integer not null,
  recipients jsonb not null,
  primary key (batch_id, block)
);

-- What the moved records need that the batch does not otherwise keep: its content (rendered per
-- recipient when sent), the sending address of its connection at creation, the request that
-- created it (its records are logged under that id), and the audience whose members' unsubscribe
-- links the records carry (signed as they are moved; null for a `recipients` batch).
alter table batches
  add column content_id integer references batch_contents (id),
  add column from_address text,
  add column request_id text,
  add column unsubscribe_audience_id integer;

-- mailroom_batch_end_event (migration 014), with recipients still in the store: the batch has
-- not ended while some of its recipients are not yet in the outbox.
create or replace function mailroom_batch_end_event(batch integer, settled integer, settled_status text)
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
  if not found then return; end if;
  if exists (
    select 1 from outbox o where o.batch_id = batch and o.id is distinct from settled
      and o.status in ('queued', 'sending')
  ) or exists (select 1 from batch_recipients r where r.batch_id = batch) then
    return;
  end if;
  select count(*) filter (where o.status = 'sent')::int, count(*) filter (where o.status = 'failed')::int
    into sent, failed
  from outbox o where o.batch_id = batch and o.id is distinct from settled;
  if settled is not null then
    sent := sent + (settled_status = 'sent')::int;
    failed := failed + (settled_status = 'failed')::int;
  end if;
  return query select b.account_id,
    case when sent > 0 then 'batch.completed' else 'batch.failed' end,
    jsonb_build_object('batch_id', b.id, 'name', b.name,
      'status', case when sent > 0 then 'completed' else 'failed' end,
      'total_count', b.total_count, 'sent_count', sent, 'failed_count', failed);
end $$;
