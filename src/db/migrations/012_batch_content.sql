-- A batch's content (subject, text and HTML template) is stored once; each recipient's record
-- holds only its recipient and payload, and its message is rendered when it is sent (and when
-- the outbox shows it). The content is a table of its own, not columns of `batches`, because a
-- deleted batch's records stay in the outbox until retention and must still show what was sent.
create table batch_contents (
  id integer generated always as identity primary key,
  account_id integer not null references accounts (id) on delete cascade,
  subject text not null,
  text_body text,
  html_body text,
  created_at timestamptz not null default now()
);

alter table outbox
  add column content_id integer references batch_contents (id),
  -- The member's payload the content is rendered with (null: every placeholder empty).
  add column payload jsonb,
  -- A record rendered from its batch's content has no subject or bodies of its own.
  alter column subject drop not null,
  add constraint outbox_subject_or_content check ((subject is null) = (content_id is not null));

-- Finds whether any record still needs a content (retention deletes contents nobody reads).
create index outbox_content on outbox (content_id) where content_id is not null;
