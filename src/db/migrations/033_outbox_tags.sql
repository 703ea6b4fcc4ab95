-- Each tag of each tagged record, by account: a page of a tag's records, newest first, is a
-- backward walk of the primary key from the cursor, a few reads whatever the account's size.
-- The GIN index on outbox.tags it replaces held every account's tagged records together, and
-- a common tag's were all read and sorted before a page was cut (docs/performance.md, "Scale").
-- The triggers of src/db/functions/20_mailroom_outbox_tags.sql keep it in step with outbox.tags;
-- it has no foreign key: the trigger on a record's deletion removes its rows through the key.
drop index if exists outbox_tags;
create table outbox_tags (
  account_id integer not null,
  name text not null,
  value text not null,
  outbox_id integer not null
);
insert into outbox_tags (account_id, name, value, outbox_id)
select o.account_id, t.tag ->> 'name', t.tag ->> 'value', o.id
from outbox o cross join jsonb_array_elements(o.tags) as t(tag)
where o.tags <> '[]';
-- Built after the rows are in: one sort rather than an index grown row by row.
alter table outbox_tags add primary key (account_id, name, value, outbox_id);
-- Its statistics now, so that the first tag pages are planned from what it holds.
analyze outbox_tags;
