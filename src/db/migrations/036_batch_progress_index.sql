-- A batch's progress (its counts by status, whether any recipient was tried, its last change) is
-- read from this index alone: the index it replaces held each recipient's status only, and the
-- rest was read from the table, a page of the outbox for every few recipients (126 ms against
-- 54 ms for a batch of 100,000 read from disk at 10 million records; docs/performance.md).
create index outbox_batch_progress on outbox (batch_id, status) include (attempts, updated_at)
  where batch_id is not null;
drop index outbox_batch;
