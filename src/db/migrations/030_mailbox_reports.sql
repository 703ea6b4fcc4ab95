-- Bounce and complaint reports read from a connection's mailbox and matched to an email's
-- recipient. A report read twice (the mailbox is read at least once per message: the cursor
-- moves only after a message is handled) meets the unique index and adds nothing.
create table outbox_reports (
  id bigint generated always as identity primary key,
  outbox_id integer not null references outbox (id) on delete cascade,
  account_id integer not null,
  connection_id integer references connections (id) on delete set null,
  kind text not null check (kind in ('bounced', 'complained')),
  recipient text not null,
  status text,          -- enhanced status of a bounce (5.1.1)
  diagnostic text,      -- Diagnostic-Code, or a complaint's Feedback-Type
  hard boolean not null default false,  -- it added a suppression
  at timestamptz not null default mailroom_now()
);
create index outbox_reports_record on outbox_reports (outbox_id, id);
create index outbox_reports_connection on outbox_reports (connection_id, at);
create unique index outbox_reports_once on outbox_reports (outbox_id, kind, recipient, coalesce(status, ''));

-- Where reading the mailbox stands: the folder's UIDVALIDITY and the last UID read (null: never
-- read; another UIDVALIDITY means the folder was rebuilt and is read anew), the last login
-- failure with its reason, and the mail read but left in the folder.
alter table connection_mailboxes
  add column uidvalidity bigint,
  add column last_uid bigint not null default 0,
  add column read_at timestamptz,
  add column failure text,
  add column failed_at timestamptz,
  add column unmatched_reports integer not null default 0,
  add column other_messages integer not null default 0;

-- A report names its email by Message-ID only. A hash index keeps that lookup cheap on millions of
-- records at a fraction of a b-tree's size: Message-IDs are long, unique and only ever compared
-- with `=`; the account is checked on the one row found.
create index outbox_message_id on outbox using hash (message_id);
