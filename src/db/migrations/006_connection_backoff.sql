-- Provider push-back holds the connection's whole queue until this instant (mailroom_now()
-- time): every run of the queue, in any process, waits for it, not only the one that was told.
alter table connections add column queue_backoff_until timestamptz;
