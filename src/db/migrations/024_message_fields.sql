-- What an email carries besides its recipients and bodies: the caller's extra header fields,
-- and each attachment's name, type, size, SHA-256 and Content-ID (null: none). The caller's
-- reply-to addresses go in reply_to, as a form's submitter does.
alter table outbox
  add column headers jsonb,
  add column attachments jsonb;

-- The attachments' bytes, kept only while the email may still go (queued mail): they go when
-- it ends, and its summaries stay on the record.
create table outbox_attachment_contents (
  outbox_id integer not null references outbox (id) on delete cascade,
  position integer not null,
  content bytea not null,
  primary key (outbox_id, position)
);
