-- outbox_tags rows belong to their account as every other table's do, through a foreign key:
-- the isolation walk (test/support/ownership.ts) and anyone reading the schema find each row's
-- owner from it, and deleting an account removes its tags through its key's leading column even
-- before the records' own deletion trigger does.
alter table outbox_tags add foreign key (account_id) references accounts (id) on delete cascade;
