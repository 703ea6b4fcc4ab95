-- outbox_tags holds one row per tag of each record (033_outbox_tags.sql), kept in step with
-- outbox.tags here. Inserts and deletes are handled a statement at a time, over the statement's
-- rows together: a batch's thousand records or a purge's five thousand are one set-based
-- statement each, not one call per record. A record's tags change after its insert only when
-- /send notes them (message-fields.ts), one record at a time: PostgreSQL allows no column list
-- on a trigger that reads a statement's rows, and a statement-level trigger on every update
-- would collect the rows of every status change, so that one is a row's trigger, called only
-- when the tags differ.
create or replace function mailroom_outbox_tags_added() returns trigger
  language plpgsql
  as $$
begin
  insert into outbox_tags (account_id, name, value, outbox_id)
  select r.account_id, t.tag ->> 'name', t.tag ->> 'value', r.id
  from added r cross join jsonb_array_elements(r.tags) as t(tag)
  where r.tags <> '[]';
  return null;
end
$$;

create or replace function mailroom_outbox_tags_removed() returns trigger
  language plpgsql
  as $$
begin
  delete from outbox_tags x
  using removed r cross join jsonb_array_elements(r.tags) as t(tag)
  where r.tags <> '[]' and x.account_id = r.account_id and x.name = t.tag ->> 'name'
    and x.value = t.tag ->> 'value' and x.outbox_id = r.id;
  return null;
end
$$;

create or replace function mailroom_outbox_tags_changed() returns trigger
  language plpgsql
  as $$
begin
  delete from outbox_tags x
  using jsonb_array_elements(old.tags) as t(tag)
  where x.account_id = old.account_id and x.name = t.tag ->> 'name'
    and x.value = t.tag ->> 'value' and x.outbox_id = old.id;
  insert into outbox_tags (account_id, name, value, outbox_id)
  select new.account_id, t.tag ->> 'name', t.tag ->> 'value', new.id
  from jsonb_array_elements(new.tags) as t(tag);
  return null;
end
$$;

-- The triggers are (re)made here, beside their functions, since they cannot exist without them.
create or replace trigger mailroom_outbox_tags_added
  after insert on outbox referencing new table as added
  for each statement execute function mailroom_outbox_tags_added();

create or replace trigger mailroom_outbox_tags_removed
  after delete on outbox referencing old table as removed
  for each statement execute function mailroom_outbox_tags_removed();

create or replace trigger mailroom_outbox_tags_changed
  after update of tags on outbox
  for each row when (old.tags is distinct from new.tags)
  execute function mailroom_outbox_tags_changed();
