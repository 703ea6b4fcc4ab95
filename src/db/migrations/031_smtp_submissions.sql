-- Where each email came from: the API (/send and /enqueue), a batch, a hosted form or signup
-- page, or the SMTP relay. Records written before it was kept are told by what they are: a
-- batch's by its batch; a form's notification and a signup page's confirmation by the subject
-- and recipients the hosted pages give them (or the form.submitted event naming the email).
alter table outbox add column source text not null default 'api'
  check (source in ('api', 'batch', 'form', 'smtp'));

update outbox set source = 'batch' where batch_id is not null;

update outbox o set source = 'form'
where o.batch_id is null and (
  exists (select 1 from forms f
          where f.account_id = o.account_id and o.subject = 'New submission: ' || f.name
            and o.to_addresses = array[o.from_address])
  or exists (select 1 from signup_pages p join audiences a on a.id = p.audience_id
             where a.account_id = o.account_id and o.subject = 'Confirm your subscription: ' || p.title)
  or exists (select 1 from webhook_events e
             where e.account_id = o.account_id and e.type = 'form.submitted'
               and (e.data ->> 'outbox_id')::int = o.id));

-- A message submitted over SMTP goes on as the app wrote it: its record keeps the bytes to send
-- (raw_size, their length; null for an email composed from its fields), in slices of up to
-- 1 MiB, until the record itself goes. needs_smtputf8: it may only go to a server that offers
-- SMTPUTF8.
alter table outbox
  add column raw_size integer,
  add column needs_smtputf8 boolean not null default false;

create table outbox_raw_slices (
  outbox_id integer not null references outbox (id) on delete cascade,
  position integer not null,
  content bytea not null,
  primary key (outbox_id, position)
);
