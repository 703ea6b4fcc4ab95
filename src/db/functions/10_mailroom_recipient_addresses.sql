-- An email's recipients (to, cc and bcc) in lower case, as the outbox's recipient index holds
-- them (034_outbox_recipients.sql): a search for a whole address reads that index
-- instead of every record of the account. Immutable, as an index's expression must be.
create or replace function mailroom_recipient_addresses(to_addresses text[], cc_addresses text[], bcc_addresses text[])
  returns text[]
  language sql immutable parallel safe
  as $$ select array(select lower(a) from unnest(to_addresses || cc_addresses || bcc_addresses) as a) $$;
