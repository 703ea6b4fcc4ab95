-- An email's tags, `[{"name": ..., "value": ...}]` in the order given ([] for none), and a
-- batch's, which each of its emails gets as it is queued. The GIN index (jsonb_path_ops: one
-- hashed key per name and per value) answers a containment filter (`tags @> ...`) without
-- reading the records that do not match; it leaves out the untagged records, which no filter
-- asks for (docs/performance.md, "Tag filters").
alter table outbox add column tags jsonb not null default '[]';
alter table batches add column tags jsonb not null default '[]';
create index outbox_tags on outbox using gin (tags jsonb_path_ops) where tags <> '[]';
