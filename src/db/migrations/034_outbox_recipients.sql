-- A search for a whole recipient address: the emails whose to, cc or bcc hold it, any case
-- (src/db/functions/10_mailroom_recipient_addresses.sql), read through this index instead of
-- every record of the account. An email has a few recipients, so each insert adds its few keys
-- to the index directly: with GIN's pending list (fastupdate) 20,000 inserts took longer, not
-- shorter, and every search read the whole list, up to 4 MB, until autovacuum merged it.
create index outbox_recipients on outbox
  using gin (mailroom_recipient_addresses(to_addresses, cc_addresses, bcc_addresses))
  with (fastupdate = off);
