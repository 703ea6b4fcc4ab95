-- A search for a whole recipient address: the emails whose to, cc or bcc hold it, any case
-- (src/db/functions/10_mailroom_recipient_addresses.sql), read through this index instead of
-- every record of the account. GIN's pending list keeps a /send's insert an append; autovacuum,
-- or an insert that finds the list full, merges it into the index.
create index outbox_recipients on outbox
  using gin (mailroom_recipient_addresses(to_addresses, cc_addresses, bcc_addresses));
