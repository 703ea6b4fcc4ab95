-- A batch's reply-to addresses (comma-separated), extra headers and attachments' summaries, and
-- the attachments' bytes: stored once for every email of the batch, and kept as long as the
-- batch is (an operator's retry of its failed emails sends them again).
create table batch_fields (
  batch_id integer primary key references batches (id) on delete cascade,
  reply_to text,
  headers jsonb,
  attachments jsonb
);

create table batch_attachment_contents (
  batch_id integer not null references batches (id) on delete cascade,
  position integer not null,
  content bytea not null,
  primary key (batch_id, position)
);
