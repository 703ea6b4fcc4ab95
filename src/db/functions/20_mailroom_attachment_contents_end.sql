-- Once an email ends (sent, failed for good, or canceled), its attachments' bytes go: only their
-- summaries stay, on the record (docs/decisions.md, "Reply-to, extra headers and attachments").
create or replace function mailroom_attachment_contents_end() returns trigger language plpgsql as $$
begin
  delete from outbox_attachment_contents where outbox_id = new.id;
  return null;
end $$;

create or replace trigger mailroom_attachment_contents_end after update of status on outbox
  for each row when (new.status in ('sent', 'failed', 'canceled') and new.attachments is not null)
  execute function mailroom_attachment_contents_end();
