-- The retention purge finds each account's expired records through outbox_account_created
-- (account_id, created_at). The index on created_at alone served only the purge, and no read:
-- at 10 million records it is a twentieth of the outbox's size and a write on every send
-- (docs/performance.md, "Scale").
drop index if exists outbox_created_at;
